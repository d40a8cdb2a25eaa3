import type { EventType } from './event.types.js';

/*
 * The events a session stream carries, typed by their `type`: one shape per entry of EVENT_TYPES.
 * They are built in one place, the builders of libs/engine (turn-events.ts), except the resync
 * below, which the stream hub of this lib also sends.
 *
 * Resources are structural here. This lib sits below the ones that own the projections an event
 * carries (turns: turn, run, item, waitpoint; protocol: session; inputs: receipt), so it cannot name
 * their DTOs, and it does not need to: the transport only reads `type` and serialises the rest. A
 * resource is therefore typed by the little that identifies it (its `id`, the receipt's `object`);
 * the builders, which can import the projections, decide what fills it, and the OpenAPI document
 * (apps/api/src/openapi/session-events.ts) states the full shape, field by field, per type.
 * (A transport generic in its resource types would give the same checks with more type plumbing
 * in every lib that only passes events along.)
 */

/** A resource an event carries (session, turn, run, item, waitpoint), known here by its id only. */
export interface EventResource {
  readonly id: string;
}

/** The turn of `yuxi.session.turn.state`: the turn projection plus the cancellation flag. */
export interface EventTurnState extends EventResource {
  readonly yuxi: { readonly cancellation_pending: boolean };
}

/** The receipt of an accepted input or control: the same object as the 202 body. */
export interface EventReceipt {
  readonly object: 'yuxi.session.event.accepted';
  readonly event_id: string;
}

/** A content part of an assistant message: its type, and the fields of that type. */
export interface EventContentPart {
  readonly type: string;
  readonly [field: string]: unknown;
}

/** `yuxi` of the events that belong to a run (the envelope adds `seq` to durable events). */
interface RunScope {
  yuxi: { run_id: string };
}

/** `yuxi` of the events of an item: an item written outside a run has no run. */
interface ItemScope {
  yuxi: { run_id: string | null };
}

// ---- Families: one shape, several types (the `type` literal is the parameter) ----

export type TurnStatusEventType = `agent.session.turn.${'created' | 'in_progress' | 'completed' | 'failed' | 'cancelled'}`;
export type RunEventType = `yuxi.session.run.${'created' | 'requires_action' | 'completed' | 'failed' | 'cancelled' | 'yielded' | 'interrupted'}`;
export type ItemEventType = `agent.session.turn.item.${'added' | 'done'}`;
export type ContentPartEventType = `agent.session.turn.content_part.${'added' | 'done'}`;

export interface TurnStatusEvent<T extends TurnStatusEventType> {
  type: T;
  turn_id: string;
  turn: EventResource;
}

export interface RunEvent<T extends RunEventType> extends RunScope {
  type: T;
  turn_id: string;
  run: EventResource;
}

export interface ItemEvent<T extends ItemEventType> extends ItemScope {
  type: T;
  turn_id: string;
  output_index: number;
  item: EventResource;
}

export interface ContentPartEvent<T extends ContentPartEventType> extends ItemScope {
  type: T;
  turn_id: string;
  item_id: string;
  output_index: number;
  content_index: number;
  part: EventContentPart;
}

// ---- One of a kind ----

export interface SessionCreatedEvent {
  type: 'agent.session.created';
  session: EventResource;
}

export interface InputAcceptedEvent {
  type: 'yuxi.session.event.accepted';
  receipt: EventReceipt;
}

export interface TurnWaitingEvent extends RunScope {
  type: 'yuxi.session.turn.waiting';
  turn_id: string;
  waitpoint: EventResource;
  turn: EventResource;
}

/** Why a turn goes on with fewer capabilities than its agent declares. */
export type CapabilityLimitReason = 'tool_source_unavailable';

/**
 * The turn goes on without some of its capabilities. Deliberately generic: a client (an app's end
 * user among them) learns that something is missing, never which source, tool or address.
 */
export interface CapabilityLimitedEvent extends RunScope {
  type: 'yuxi.session.turn.capability_limited';
  turn_id: string;
  reason: CapabilityLimitReason;
  message: string;
}

/** A budget in the session's scope has no room for the turn's next call (limit keys and scope kinds as libs/budgets names them). */
export interface BudgetReachedEvent extends RunScope {
  type: 'yuxi.session.budget.reached';
  turn_id: string;
  budget_id: string;
  scope: { kind: string; id: string };
  limit: string;
  limit_value: number;
  spent: number;
  on_exceeded: 'pause' | 'fail';
}

export interface TurnStateEvent {
  type: 'yuxi.session.turn.state';
  turn_id: string;
  turn: EventTurnState;
}

export interface OutputTextDeltaEvent extends ItemScope {
  type: 'agent.session.turn.output_text.delta';
  turn_id: string;
  item_id: string;
  output_index: number;
  content_index: number;
  delta: string;
}

export interface OutputTextDoneEvent extends ItemScope {
  type: 'agent.session.turn.output_text.done';
  turn_id: string;
  item_id: string;
  output_index: number;
  content_index: number;
  text: string;
}

export interface ReasoningDeltaEvent extends ItemScope {
  type: 'yuxi.session.turn.reasoning.delta';
  turn_id: string;
  item_id: string;
  output_index: number;
  reasoning_index: number;
  delta: string;
}

export interface ReasoningDoneEvent extends ItemScope {
  type: 'yuxi.session.turn.reasoning.done';
  turn_id: string;
  item_id: string;
  output_index: number;
  reasoning_index: number;
  text: string;
}

/** A server tool call in flight reported progress (live only). */
export interface ToolProgressEvent extends RunScope {
  type: 'yuxi.session.turn.tool_progress';
  turn_id: string;
  /** The call's id: its function_call item and its function_call_output carry the same. */
  call_id: string;
  progress: number;
  total: number | null;
  message: string | null;
}

/** A command in a session's workspace wrote output (live only): the upstream event, on its command_execution item. */
export interface CommandOutputDeltaEvent extends RunScope {
  type: 'agent.output.command_execution_output.delta';
  turn_id: string;
  item_id: string;
  output_index: number;
  delta: string;
}

export interface ContextCompressionEvent extends RunScope {
  type: 'yuxi.session.turn.context_compression';
  turn_id: string;
  phase: 'started' | 'completed' | 'failed';
  trigger: 'auto' | 'manual' | 'overflow';
  /** completed: the compaction item and its output index in the turn. */
  output_index?: number;
  item?: EventResource;
  /** failed: why. */
  error?: { code: string; message: string };
}

/** A member a coordinator's create_subagent call created. */
export interface SubagentCreatedEvent {
  type: 'agent.session.subagent.created';
  turn_id: string;
  subagent: { id: string; agent_id: string; name: string; task: string; parent_session_id: string; root_session_id: string; depth: number };
  yuxi: { run_id: string };
}

/** A member's turn settled (on its parent's stream). */
export interface SubagentStateEvent {
  type: 'yuxi.session.subagent.state';
  subagent_id: string;
  name: string;
  turn_id: string;
  status: string;
  error_code: string | null;
}

export type ResyncReason = 'cursor_expired' | 'events_lost';

export interface ResyncEvent {
  type: 'yuxi.session.resync';
  reason: ResyncReason;
}

/**
 * The compile-time check of the catalogue: `T` must have one entry per key of EVENT_TYPES, whose
 * `type` is that key, and no other entry. A type added to EVENT_TYPES without its shape here fails
 * with "Property '<type>' is missing in type …".
 */
type CoversCatalogue<T extends { [K in EventType]: { type: K } } & Record<Exclude<keyof T, EventType>, never>> = T;

/** The shape of each event type (before the envelope: event_id, session_id, created_at, yuxi.seq). */
export type EventsByType = CoversCatalogue<{
  'agent.session.created': SessionCreatedEvent;
  'yuxi.session.event.accepted': InputAcceptedEvent;
  'yuxi.session.run.created': RunEvent<'yuxi.session.run.created'>;
  'agent.session.turn.created': TurnStatusEvent<'agent.session.turn.created'>;
  'agent.session.turn.in_progress': TurnStatusEvent<'agent.session.turn.in_progress'>;
  'yuxi.session.turn.capability_limited': CapabilityLimitedEvent;
  'agent.session.turn.item.added': ItemEvent<'agent.session.turn.item.added'>;
  'agent.session.turn.content_part.added': ContentPartEvent<'agent.session.turn.content_part.added'>;
  'agent.session.turn.output_text.delta': OutputTextDeltaEvent;
  'yuxi.session.turn.reasoning.delta': ReasoningDeltaEvent;
  'yuxi.session.turn.reasoning.done': ReasoningDoneEvent;
  'yuxi.session.turn.tool_progress': ToolProgressEvent;
  'agent.output.command_execution_output.delta': CommandOutputDeltaEvent;
  'agent.session.turn.output_text.done': OutputTextDoneEvent;
  'agent.session.turn.content_part.done': ContentPartEvent<'agent.session.turn.content_part.done'>;
  'agent.session.turn.item.done': ItemEvent<'agent.session.turn.item.done'>;
  'yuxi.session.turn.context_compression': ContextCompressionEvent;
  'agent.session.subagent.created': SubagentCreatedEvent;
  'yuxi.session.subagent.state': SubagentStateEvent;
  'yuxi.session.run.yielded': RunEvent<'yuxi.session.run.yielded'>;
  'yuxi.session.run.interrupted': RunEvent<'yuxi.session.run.interrupted'>;
  'yuxi.session.run.requires_action': RunEvent<'yuxi.session.run.requires_action'>;
  'yuxi.session.turn.waiting': TurnWaitingEvent;
  'yuxi.session.budget.reached': BudgetReachedEvent;
  'yuxi.session.run.completed': RunEvent<'yuxi.session.run.completed'>;
  'yuxi.session.run.failed': RunEvent<'yuxi.session.run.failed'>;
  'yuxi.session.run.cancelled': RunEvent<'yuxi.session.run.cancelled'>;
  'yuxi.session.turn.state': TurnStateEvent;
  'agent.session.turn.completed': TurnStatusEvent<'agent.session.turn.completed'>;
  'agent.session.turn.failed': TurnStatusEvent<'agent.session.turn.failed'>;
  'agent.session.turn.cancelled': TurnStatusEvent<'agent.session.turn.cancelled'>;
  'yuxi.session.resync': ResyncEvent;
}>;

/** The event of one type. */
export type EventOf<K extends EventType> = EventsByType[K];

/** An event as its emitter hands it to the outbox or the live stream: a union discriminated by `type`. */
export type OutgoingEvent = EventsByType[EventType];

/**
 * The builder of `yuxi.session.resync`, here rather than with the others (libs/engine) because
 * the stream hub of this lib sends one to a subscriber that missed events; lifecycle's builder map
 * uses this one.
 */
export function resyncEvent(reason: ResyncReason): ResyncEvent {
  return { type: 'yuxi.session.resync', reason };
}
