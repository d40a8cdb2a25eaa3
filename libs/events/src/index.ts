export { compareStreamIds, decodeCursor, encodeCursor, sequenceStep, type StreamPosition } from './cursor.js';
export { EVENT_TYPES, type EventType, type PublicEvent } from './event.types.js';
export { type AppendOptions, EventOutbox, type FlushResult, type LaggingSession, type OutboxBatch } from './event-outbox.js';
export { type DurableRow, EventPublisher, type LiveOutcome, type OutgoingEvent } from './event-publisher.js';
export { EventStreamHub, hasGap, type StreamFrame, type StreamInfo, type SubscribeResult } from './event-stream-hub.js';
export { EventsModule, EventStreamModule } from './events.module.js';
