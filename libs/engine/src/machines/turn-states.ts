import { defineMachine, sqlList, type Transition } from '#libs/database';

export { sqlList, statusGuard, type Transition } from '#libs/database';

/**
 * The state machines of turns, runs, steps and items, declared once. Status unions, the DTO and
 * OpenAPI enums, the SQL guards of the repositories and the invariant checks
 * (scripts/lib/invariants.mjs reads the built copy of this module) all derive from here.
 *
 * Each machine is a defineMachine declaration (libs/database/src/machine.ts): its CHECK, guards
 * and enum come from there. The transition tables below keep their names for the repositories.
 *
 * Each transition table names the repository method that performs each edge; the method's SQL
 * carries the edge's guard (`statusGuard`) so the database refuses an edge the table does not
 * allow, atomically. test/unit/states.test.ts runs every named method against a recording
 * connection and checks that its statement carries the guard of its edge.
 */

/** `queued` is in the wire contract but never written by this build: a claim creates its turn `in_progress`. */
export const TURN_STATUSES = ['queued', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled'] as const;
export type TurnStatus = (typeof TURN_STATUSES)[number];
/** Turn statuses that still hold the session (a partial unique index allows one such turn per session). */
export const ACTIVE_TURN_STATUSES = ['queued', 'in_progress', 'requires_action'] as const satisfies readonly TurnStatus[];
export const TERMINAL_TURN_STATUSES = ['completed', 'failed', 'cancelled'] as const satisfies readonly TurnStatus[];

/** `queued` as for turns: in the contract, never written. A run ends in any status but `in_progress`. */
export const RUN_STATUSES = ['queued', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled', 'yielded', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
/** How a run that executes may end through a settlement. */
/** A lease holds only on a run in progress: every write through one, and every ending of a run that executes, starts here. */
export const LEASABLE_RUN_STATUSES = ['in_progress'] as const satisfies readonly RunStatus[];
export const SETTLED_RUN_STATUSES = ['completed', 'failed', 'cancelled'] as const satisfies readonly RunStatus[];
export type SettledStatus = (typeof SETTLED_RUN_STATUSES)[number];

/**
 * What a committed step of a turn records. A new kind is added here, in the run_steps CHECK
 * constraint (a migration), as a planner action (libs/runtime/src/step-plan.ts) and as a step
 * transition (libs/engine/src/steps, as model-call-steps.ts): see README, "Adding a step kind".
 */
export const STEP_KINDS = ['model_call', 'tool_call', 'waitpoint', 'compaction'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/** A tool call is `started` before a server tool runs and `completed` with its result; `failed` is declared by the schema, never written. */
export const STEP_STATUSES = ['started', 'completed', 'failed'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];

export const ITEM_STATUSES = ['in_progress', 'completed', 'incomplete'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

/**
 * Items are written once, in their final status, and never updated; except a command_execution
 * item, written in progress with its call and ended with its result: completed when the command
 * ran to its exit, incomplete when it did not (a limit, a worker lost mid-command, a call refused).
 */
export const ITEM_MACHINE = defineMachine({
  table: 'items',
  column: 'status',
  states: ITEM_STATUSES,
  initial: ITEM_STATUSES,
  terminal: ['completed', 'incomplete'],
  edges: { insert: { from: [null], to: ITEM_STATUSES }, endCommand: { from: ['in_progress'], to: ['completed', 'incomplete'] } },
});

export const TURN_TRANSITIONS = {
  /** A claim turns the queue head into a turn with its first run. */
  start: { from: [null], to: ['in_progress'], by: 'TurnsRepository.startTurn', column: 'status' },
  /**
   * The run stops at a waitpoint; the turn waits: `requires_action` for a person or the client, or
   * still `in_progress` for a coordinator's wait on its members (`cooperation`: nobody is asked).
   */
  suspend: { from: ['in_progress'], to: ['requires_action', 'in_progress'], by: 'RunsRepository.suspendRun', column: 'turns.status' },
  /** A waitpoint is answered (or the members a coordinator waits for settled): the turn continues in a new run. */
  resume: { from: ['requires_action', 'in_progress'], to: ['in_progress'], by: 'TurnsRepository.resumeTurn', column: 'status' },
  /** The run settles, and its turn with it (see settledStatus for cancel-wins-over-completion). */
  settle: { from: LEASABLE_RUN_STATUSES, to: SETTLED_RUN_STATUSES, by: 'TurnsRepository.settle', column: 'r.status' },
  /** A waiting turn (any waitpoint, a cooperation wait included) is cancelled at once: no worker holds it. */
  cancelWaiting: { from: ['requires_action', 'in_progress'], to: ['cancelled'], by: 'TurnsRepository.cancelWaitingTurn', column: 'status' },
  /** Not a status change: an active turn is flagged `cancellation_pending`, and ends at its next boundary. */
  requestCancel: { from: ACTIVE_TURN_STATUSES, to: ACTIVE_TURN_STATUSES, by: 'TurnsRepository.requestCancel', column: 'status' },
} as const satisfies Record<string, Transition<TurnStatus>>;

export const RUN_TRANSITIONS = {
  /** A turn's first run, leased to the claiming worker. */
  start: { from: [null], to: ['in_progress'], by: 'TurnsRepository.startTurn', column: 'status' },
  /** The run yields to a steer; its successor (same turn, next epoch) is created in the same statement. */
  yield: { from: LEASABLE_RUN_STATUSES, to: ['yielded'], by: 'RunsRepository.yieldRun', column: 'status' },
  /** Released at shutdown or recovered after its lease expired; an unleased successor waits for a worker. */
  interrupt: { from: LEASABLE_RUN_STATUSES, to: ['interrupted'], by: 'RunsRepository.interruptRun', column: 'status' },
  suspend: { from: LEASABLE_RUN_STATUSES, to: ['requires_action'], by: 'RunsRepository.suspendRun', column: 'status' },
  /** The run that continues a resumed turn. */
  resume: { from: [null], to: ['in_progress'], by: 'TurnsRepository.resumeTurn', column: 'status' },
  settle: { from: LEASABLE_RUN_STATUSES, to: SETTLED_RUN_STATUSES, by: 'TurnsRepository.settle', column: 'r.status' },
  cancelWaiting: { from: ['requires_action'], to: ['cancelled'], by: 'TurnsRepository.cancelWaitingTurn', column: 'status' },
} as const satisfies Record<string, Transition<RunStatus>>;

export const STEP_TRANSITIONS = {
  /** A step is recorded `started` (a server tool about to run) or `completed`; a started one completes once. */
  record: { from: [null, 'started'], to: ['started', 'completed'], by: 'StepsRepository.recordStep', column: 'run_steps.status' },
} as const satisfies Record<string, Transition<StepStatus>>;

/** `requestCancel` is no edge of the machine: it flags an active turn and leaves its status as it is. */
const TURN_EDGES = (({ start, suspend, resume, settle, cancelWaiting }) => ({ start, suspend, resume, settle, cancelWaiting }))(TURN_TRANSITIONS);

export const TURN_MACHINE = defineMachine({
  table: 'turns',
  column: 'status',
  states: TURN_STATUSES,
  initial: ['in_progress'],
  terminal: TERMINAL_TURN_STATUSES,
  unwritten: ['queued'],
  edges: TURN_EDGES,
});

/**
 * `queued` is unwritten here too: a run that waits for a worker is `in_progress` with no lease
 * holder (RUN_LEASE_MACHINE, lease-machine.ts). A run waiting at a waitpoint (`requires_action`)
 * is left only by a cancel: the turn resumes in a new run.
 */
export const RUN_MACHINE = defineMachine({
  table: 'runs',
  column: 'status',
  states: RUN_STATUSES,
  initial: ['in_progress'],
  terminal: ['completed', 'failed', 'cancelled', 'yielded', 'interrupted'],
  unwritten: ['queued'],
  edges: RUN_TRANSITIONS,
});

export const STEP_MACHINE = defineMachine({
  table: 'run_steps',
  column: 'status',
  states: STEP_STATUSES,
  initial: ['started', 'completed'],
  terminal: ['completed', 'failed'],
  unwritten: ['failed'],
  edges: STEP_TRANSITIONS,
});

/**
 * A decision, not an edge: a completion that commits after a cancel was accepted ends the turn
 * `cancelled` (the client was told the turn would stop); a failure stays a failure. The settle
 * statement evaluates the same rule in SQL (settledStatusSql), atomically with the cancel flag.
 */
export const CANCEL_WINS_OVER = ['completed'] as const satisfies readonly SettledStatus[];

export function settledStatus(requested: SettledStatus, cancellationPending: boolean): SettledStatus {
  return cancellationPending && (CANCEL_WINS_OVER as readonly string[]).includes(requested) ? 'cancelled' : requested;
}

/** settledStatus as a SQL expression over a boolean column and a text parameter. */
export function settledStatusSql(pendingColumn: string, requestedParam: string): string {
  return `CASE WHEN ${pendingColumn} AND ${requestedParam} IN (${sqlList(CANCEL_WINS_OVER)}) THEN 'cancelled' ELSE ${requestedParam} END`;
}
