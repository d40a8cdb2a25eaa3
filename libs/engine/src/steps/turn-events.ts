import {
  type BudgetReachedEvent,
  type CapabilityLimitedEvent,
  type CapabilityLimitReason,
  type ContentPartEvent,
  type ContentPartEventType,
  type EventOf,
  type EventResource,
  type EventType,
  type InputAcceptedEvent,
  type ItemEvent,
  type ItemEventType,
  resyncEvent,
  type RunEvent,
  type RunEventType,
  type SessionCreatedEvent,
  type ToolProgressEvent,
  type TurnStateEvent,
  type TurnStatusEvent,
  type TurnStatusEventType,
} from '#libs/events';
import type { AcceptedReceipt } from '../tables/receipt.entity.js';
import type { ToolProgress } from '#libs/tools';
import { type CompactionTrigger, type ItemEntity, type PublicError, type RunEntity, type StoredContentPart, type TurnEntity, type Waitpoint } from '../tables/turn.entities.js';
import { toItemDto, toRunDto, toTurnDto } from '../views/projections.js';
import type { BudgetReached as BudgetReachedFact } from '../waitpoints/waitpoints.js';

/*
 * The builders of every public SSE event of a session, so every emitter projects the same way and
 * no emitter writes an event literal. EVENT_BUILDERS has one builder per type of EVENT_TYPES and
 * each returns exactly its type's shape (libs/events/src/outgoing-events.ts): `satisfies` below makes
 * a type without a builder, or a builder that builds another type, a compile error. `turnEvents` is
 * how emitters call them.
 */

/** Where an item-scoped event points: its turn, item and output index (in the wire's field order). */
const onItem = (item: ItemEntity, outputIndex: number) => ({ turn_id: item.turnId, item_id: item.id, output_index: outputIndex });
/** The run that produced the item. */
const runOf = (item: ItemEntity) => ({ run_id: item.runId });

const turnStatusEvent =
  <T extends TurnStatusEventType>(type: T) =>
  (turn: TurnEntity): TurnStatusEvent<T> => ({ type, turn_id: turn.id, turn: toTurnDto(turn) });

const runEvent =
  <T extends RunEventType>(type: T) =>
  (run: RunEntity): RunEvent<T> => ({ type, turn_id: run.turnId, run: toRunDto(run), yuxi: { run_id: run.id } });

const itemEvent =
  <T extends ItemEventType>(type: T) =>
  (item: ItemEntity, outputIndex: number, receipts?: ReadonlyMap<string, Date>): ItemEvent<T> => ({
    type,
    turn_id: item.turnId,
    output_index: outputIndex,
    item: toItemDto(item, receipts),
    yuxi: runOf(item),
  });

const contentPartEvent =
  <T extends ContentPartEventType>(type: T) =>
  (item: ItemEntity, outputIndex: number, contentIndex: number, part: StoredContentPart): ContentPartEvent<T> => ({
    type,
    ...onItem(item, outputIndex),
    content_index: contentIndex,
    part: { ...part, annotations: [] },
    yuxi: runOf(item),
  });

/** What clients read of a limitation: generic on purpose (no source, tool or address of the resource). */
export const CAPABILITY_LIMIT_MESSAGES: Readonly<Record<CapabilityLimitReason, string>> = {
  tool_source_unavailable: 'Some tools are unavailable for this turn; it continues without them.',
};

/** For each event type, a function building that type's event (whatever its arguments). */
type EventBuilders = { [K in EventType]: (...args: never[]) => EventOf<K> };

/** One builder per event type; the compiler refuses a type of EVENT_TYPES without one. */
export const EVENT_BUILDERS = {
  /** The first event of every session stream; `session` is the create response (protocol projects it). */
  'agent.session.created': (session: EventResource): SessionCreatedEvent => ({ type: 'agent.session.created', session }),
  'yuxi.session.event.accepted': (receipt: AcceptedReceipt): InputAcceptedEvent => ({ type: 'yuxi.session.event.accepted', receipt }),
  'yuxi.session.run.created': runEvent('yuxi.session.run.created'),
  'agent.session.turn.created': turnStatusEvent('agent.session.turn.created'),
  'agent.session.turn.in_progress': turnStatusEvent('agent.session.turn.in_progress'),
  /** The turn goes on without some capability; the message is the same for every turn (it names nothing). */
  'yuxi.session.turn.capability_limited': (turnId: string, runId: string, reason: CapabilityLimitReason): CapabilityLimitedEvent => ({
    type: 'yuxi.session.turn.capability_limited',
    turn_id: turnId,
    reason,
    message: CAPABILITY_LIMIT_MESSAGES[reason],
    yuxi: { run_id: runId },
  }),
  'agent.session.turn.item.added': itemEvent('agent.session.turn.item.added'),
  'agent.session.turn.content_part.added': contentPartEvent('agent.session.turn.content_part.added'),
  'agent.session.turn.output_text.delta': (item: ItemEntity, outputIndex: number, contentIndex: number, delta: string): EventOf<'agent.session.turn.output_text.delta'> => ({
    type: 'agent.session.turn.output_text.delta',
    ...onItem(item, outputIndex),
    content_index: contentIndex,
    delta,
    yuxi: runOf(item),
  }),
  'yuxi.session.turn.reasoning.delta': (item: ItemEntity, outputIndex: number, delta: string): EventOf<'yuxi.session.turn.reasoning.delta'> => ({
    type: 'yuxi.session.turn.reasoning.delta',
    ...onItem(item, outputIndex),
    // One reasoning block per assistant message: its index in the item's yuxi.reasoning.
    reasoning_index: 0,
    delta,
    yuxi: runOf(item),
  }),
  'yuxi.session.turn.reasoning.done': (item: ItemEntity, outputIndex: number, text: string): EventOf<'yuxi.session.turn.reasoning.done'> => ({
    type: 'yuxi.session.turn.reasoning.done',
    ...onItem(item, outputIndex),
    reasoning_index: 0,
    text,
    yuxi: runOf(item),
  }),
  /** A server call in flight reported progress (live): bound to the call by its id, and to the run that runs it. */
  'yuxi.session.turn.tool_progress': (turnId: string, runId: string, callId: string, report: ToolProgress): ToolProgressEvent => ({
    type: 'yuxi.session.turn.tool_progress',
    turn_id: turnId,
    call_id: callId,
    progress: report.progress,
    total: report.total ?? null,
    message: report.message ?? null,
    yuxi: { run_id: runId },
  }),
  /** A command in flight wrote output (live): on its command_execution item, by the run that runs it. */
  'agent.output.command_execution_output.delta': (
    command: { turnId: string; itemId: string; outputIndex: number },
    runId: string,
    delta: string,
  ): EventOf<'agent.output.command_execution_output.delta'> => ({
    type: 'agent.output.command_execution_output.delta',
    turn_id: command.turnId,
    item_id: command.itemId,
    output_index: command.outputIndex,
    delta,
    yuxi: { run_id: runId },
  }),
  'agent.session.turn.output_text.done': (item: ItemEntity, outputIndex: number, contentIndex: number, text: string): EventOf<'agent.session.turn.output_text.done'> => ({
    type: 'agent.session.turn.output_text.done',
    ...onItem(item, outputIndex),
    content_index: contentIndex,
    text,
    yuxi: runOf(item),
  }),
  'agent.session.turn.content_part.done': contentPartEvent('agent.session.turn.content_part.done'),
  'agent.session.turn.item.done': itemEvent('agent.session.turn.item.done'),
  /** A compaction of the turn's context: started (live), completed with its item, or failed. */
  'yuxi.session.turn.context_compression': (
    phase: 'started' | 'completed' | 'failed',
    scope: { turnId: string; runId: string; trigger: CompactionTrigger },
    outcome: { item?: ItemEntity; outputIndex?: number; error?: PublicError } = {},
  ): EventOf<'yuxi.session.turn.context_compression'> => ({
    type: 'yuxi.session.turn.context_compression',
    turn_id: scope.turnId,
    phase,
    trigger: scope.trigger,
    ...(outcome.item ? { output_index: outcome.outputIndex ?? 0, item: toItemDto(outcome.item) } : {}),
    ...(outcome.error ? { error: outcome.error } : {}),
    yuxi: { run_id: scope.runId },
  }),
  /** A member the coordinator's call created (on the coordinator's stream). */
  'agent.session.subagent.created': (
    turnId: string,
    runId: string,
    subagent: EventOf<'agent.session.subagent.created'>['subagent'],
  ): EventOf<'agent.session.subagent.created'> => ({ type: 'agent.session.subagent.created', turn_id: turnId, subagent, yuxi: { run_id: runId } }),
  /** A member's turn settled (on its parent's stream). */
  'yuxi.session.subagent.state': (signal: { memberSessionId: string; name: string; turnId: string; status: string; errorCode: string | null }): EventOf<'yuxi.session.subagent.state'> => ({
    type: 'yuxi.session.subagent.state',
    subagent_id: signal.memberSessionId,
    name: signal.name,
    turn_id: signal.turnId,
    status: signal.status,
    error_code: signal.errorCode,
  }),
  'yuxi.session.run.yielded': runEvent('yuxi.session.run.yielded'),
  'yuxi.session.run.interrupted': runEvent('yuxi.session.run.interrupted'),
  'yuxi.session.run.requires_action': runEvent('yuxi.session.run.requires_action'),
  /** The turn stopped at a waitpoint: what it waits for, bound to the turn and the run that asked. */
  'yuxi.session.turn.waiting': (turn: TurnEntity, waitpoint: Waitpoint): EventOf<'yuxi.session.turn.waiting'> => ({
    type: 'yuxi.session.turn.waiting',
    turn_id: turn.id,
    waitpoint,
    turn: toTurnDto(turn),
    yuxi: { run_id: waitpoint.run_id },
  }),
  /** A budget had no room for the turn's next call (what the gate read, in the wire's names). */
  'yuxi.session.budget.reached': (turnId: string, runId: string, reached: BudgetReachedFact): BudgetReachedEvent => ({
    type: 'yuxi.session.budget.reached',
    turn_id: turnId,
    budget_id: reached.budgetId,
    scope: { kind: reached.scope.kind, id: reached.scope.id },
    limit: reached.limit,
    limit_value: reached.limitValue,
    spent: reached.spent,
    on_exceeded: reached.onExceeded,
    yuxi: { run_id: runId },
  }),
  'yuxi.session.run.completed': runEvent('yuxi.session.run.completed'),
  'yuxi.session.run.failed': runEvent('yuxi.session.run.failed'),
  'yuxi.session.run.cancelled': runEvent('yuxi.session.run.cancelled'),
  /** The turn projection plus the cancellation flag (set by an accepted cancel until the terminal event). */
  'yuxi.session.turn.state': (turn: TurnEntity): TurnStateEvent => {
    const dto = toTurnDto(turn);
    return { type: 'yuxi.session.turn.state', turn_id: turn.id, turn: { ...dto, yuxi: { ...dto.yuxi, cancellation_pending: turn.cancellationPending } } };
  },
  'agent.session.turn.completed': turnStatusEvent('agent.session.turn.completed'),
  'agent.session.turn.failed': turnStatusEvent('agent.session.turn.failed'),
  'agent.session.turn.cancelled': turnStatusEvent('agent.session.turn.cancelled'),
  // Defined in libs/events: the stream hub sends it too.
  'yuxi.session.resync': resyncEvent,
} satisfies EventBuilders;

/** The builders as emitters call them, a status or a phase standing for the last part of the type. */
export const turnEvents = {
  sessionCreated: EVENT_BUILDERS['agent.session.created'],
  accepted: EVENT_BUILDERS['yuxi.session.event.accepted'],
  turn(type: 'created' | 'in_progress' | 'completed' | 'failed' | 'cancelled', turn: TurnEntity) {
    return EVENT_BUILDERS[`agent.session.turn.${type}` as const](turn);
  },
  /** The turn changed state without a status change (a cancel was accepted). */
  turnState: EVENT_BUILDERS['yuxi.session.turn.state'],
  run(type: 'created' | 'requires_action' | 'completed' | 'failed' | 'cancelled' | 'yielded' | 'interrupted', run: RunEntity) {
    return EVENT_BUILDERS[`yuxi.session.run.${type}` as const](run);
  },
  waiting: EVENT_BUILDERS['yuxi.session.turn.waiting'],
  capabilityLimited: EVENT_BUILDERS['yuxi.session.turn.capability_limited'],
  budgetReached: EVENT_BUILDERS['yuxi.session.budget.reached'],
  reasoningDelta: EVENT_BUILDERS['yuxi.session.turn.reasoning.delta'],
  reasoningDone: EVENT_BUILDERS['yuxi.session.turn.reasoning.done'],
  toolProgress: EVENT_BUILDERS['yuxi.session.turn.tool_progress'],
  commandOutput: EVENT_BUILDERS['agent.output.command_execution_output.delta'],
  /** `receipts`: when the inputs of user messages were received (input id → received_at). */
  item(type: 'added' | 'done', item: ItemEntity, outputIndex: number, receipts?: ReadonlyMap<string, Date>) {
    return EVENT_BUILDERS[`agent.session.turn.item.${type}` as const](item, outputIndex, receipts);
  },
  contentPart(type: 'added' | 'done', item: ItemEntity, outputIndex: number, contentIndex: number, part: StoredContentPart) {
    return EVENT_BUILDERS[`agent.session.turn.content_part.${type}` as const](item, outputIndex, contentIndex, part);
  },
  textDelta: EVENT_BUILDERS['agent.session.turn.output_text.delta'],
  contextCompression: EVENT_BUILDERS['yuxi.session.turn.context_compression'],
  subagentCreated: EVENT_BUILDERS['agent.session.subagent.created'],
  subagentState: EVENT_BUILDERS['yuxi.session.subagent.state'],
  textDone: EVENT_BUILDERS['agent.session.turn.output_text.done'],
  /** Events may have been missed (`events_lost`: deltas were dropped on the way). */
  resync: EVENT_BUILDERS['yuxi.session.resync'],
};
