export { compareStreamIds, decodeCursor, encodeCursor, isRetiredCursor, sequenceStep, type StreamPosition } from './cursor.js';
export { EVENT_FORMAT, EVENT_TYPES, type EventType, type PublicEvent } from './event.types.js';
export { type AppendOptions, EventOutbox, type FlushResult, type LaggingSession, type OutboxBatch, type OutboxRow, type OutboxWrite } from './event-outbox.js';
export { boundItemContent } from './item-content-bound.js';
export { type OutboxAppend, type OutboxContribution, type OutboxSubscriber, OutboxSubscribers } from './outbox-subscribers.js';
export { type DurableRow, EventPublisher, type LiveOutcome } from './event-publisher.js';
export { EventStreamHub, hasGap, type StreamInfo, type SubscribeResult } from './event-stream-hub.js';
export { entryEvents, type StreamFrame, toFrames } from './stream-frames.js';
export { EventsModule, EventStreamModule } from './events.module.js';
export { shardOf, shardTag, StreamKeys } from './stream-keys.js';
export {
  type BudgetReachedEvent,
  type CapabilityLimitedEvent,
  type CapabilityLimitReason,
  type ContentPartEvent,
  type ContentPartEventType,
  type EventContentPart,
  type EventOf,
  type EventReceipt,
  type EventResource,
  type EventsByType,
  type EventTurnState,
  type InputAcceptedEvent,
  type ItemEvent,
  type ItemEventType,
  type OutgoingEvent,
  type OutputTextDeltaEvent,
  type OutputTextDoneEvent,
  type ReasoningDeltaEvent,
  type ReasoningDoneEvent,
  type ResyncEvent,
  type ResyncReason,
  resyncEvent,
  type RunEvent,
  type RunEventType,
  type SessionCreatedEvent,
  type ToolProgressEvent,
  type CommandOutputDeltaEvent,
  type TurnStateEvent,
  type TurnStatusEvent,
  type TurnStatusEventType,
  type TurnWaitingEvent,
} from './outgoing-events.js';
