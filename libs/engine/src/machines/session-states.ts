import { defineMachine, type StateOf } from '#libs/database';

/**
 * A session's work status: derived, never stored (no table, no CHECK). One declaration, one
 * function (sessionStatusOf) and its SQL twin (sessionStatusSql), which the session search uses;
 * libs/engine shows it on the session resource. Its terminal turn statuses are the turn
 * machine's (test/unit/machines.test.ts holds them equal: this lib cannot import libs/engine).
 */
export const SESSION_STATUS_MACHINE = defineMachine({
  table: null,
  column: 'status',
  states: ['idle', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled'],
  // A session created with a first input shows in_progress at once.
  initial: ['idle', 'in_progress'],
  terminal: [],
  edges: {
    create: { from: [null], to: ['idle', 'in_progress'] },
    /** Work will run: a turn starts or resumes, or inputs wait in an unpaused queue. */
    work: { from: ['idle', 'requires_action', 'completed', 'failed', 'cancelled', 'in_progress'], to: ['in_progress'] },
    /** The active turn waits at a waitpoint for a person or the client. */
    wait: { from: ['in_progress'], to: ['requires_action'] },
    /** The latest turn ended and nothing else will run by itself. */
    end: { from: ['in_progress', 'requires_action'], to: ['completed', 'failed', 'cancelled'] },
  },
});
export type SessionStatus = StateOf<typeof SESSION_STATUS_MACHINE>;

/** What the status derives from: the latest turn's status (null: no turn yet) and the input queue. */
export interface SessionStatusSource {
  turnStatus: string | null;
  pendingInputCount: number;
  queuePaused: boolean;
}

/**
 * An active turn shows its own state (a queued one shows in_progress); queued work that will run
 * shows in_progress; otherwise the latest turn's terminal state, or idle for a session with no turns.
 */
export function sessionStatusOf(source: SessionStatusSource): SessionStatus {
  const status = source.turnStatus;
  if (status === 'requires_action') return 'requires_action';
  if (status === 'in_progress' || status === 'queued') return 'in_progress';
  if (source.pendingInputCount > 0 && !source.queuePaused) return 'in_progress';
  if (status === null) return 'idle';
  if (!SESSION_STATUS_MACHINE.is(status)) throw new Error(`a session's latest turn has an undeclared status: ${status}`);
  return status;
}

/**
 * sessionStatusOf as SQL predicates, one per status, over the turn status expression and the
 * queue's columns (a session row aliased as `s` by default).
 */
export function sessionStatusSql(turnStatus: string, willRun = '(s.pending_input_count > 0 AND NOT s.queue_paused)'): Record<SessionStatus, string> {
  const ended = (status: 'completed' | 'failed' | 'cancelled'): string => `(${turnStatus} = '${status}' AND NOT ${willRun})`;
  return {
    requires_action: `${turnStatus} = 'requires_action'`,
    in_progress: `(${turnStatus} IN ('in_progress', 'queued') OR (${turnStatus} IS DISTINCT FROM 'requires_action' AND ${willRun}))`,
    idle: `(${turnStatus} IS NULL AND NOT ${willRun})`,
    completed: ended('completed'),
    failed: ended('failed'),
    cancelled: ended('cancelled'),
  };
}

/**
 * The signal a member of a cooperation tree leaves its parent (cooperation_signals.status): the
 * status its turn ended in (a turn machine terminal status), or `settled` when it settled with no
 * turn ending. Written once; delivery is `delivered_at`, not a status.
 */
export const COOPERATION_SIGNAL_MACHINE = defineMachine({
  table: 'cooperation_signals',
  column: 'status',
  states: ['completed', 'failed', 'cancelled', 'settled'],
  initial: ['completed', 'failed', 'cancelled', 'settled'],
  terminal: ['completed', 'failed', 'cancelled', 'settled'],
  edges: {
    turnEnded: { from: [null], to: ['completed', 'failed', 'cancelled'], by: 'TreeRepository.signalTurnEnded' },
    settled: { from: [null], to: ['settled'], by: 'TreeRepository.signalSettled' },
  },
});
export type CooperationSignalStatus = StateOf<typeof COOPERATION_SIGNAL_MACHINE>;
