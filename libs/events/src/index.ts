export { compareStreamIds, decodeCursor, encodeCursor } from './cursor.js';
export { EVENT_TYPES, type EventType, type PublicEvent } from './event.types.js';
export { EventPublisher, type OutgoingEvent } from './event-publisher.js';
export { EventStreamHub, type StreamFrame, type SubscribeResult } from './event-stream-hub.js';
export { EventsModule, EventStreamModule } from './events.module.js';
