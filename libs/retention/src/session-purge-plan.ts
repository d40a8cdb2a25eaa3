/**
 * The pure decisions of the purge of deleted sessions (SessionPurge, retention kind
 * `deleted_sessions`), unit-tested without a database.
 */

/** Due sessions one batch works on: each step's statement covers them all, at most the batch's row limit each. */
export const PURGE_SESSIONS_PER_BATCH = 20;

/**
 * How long a deleted session whose purge failed on its own (retried alone after its batch failed)
 * is held before it is tried again, by the lifecycle clock: the queue behind it goes on meanwhile.
 */
export const PURGE_FAILED_RETRY_S = 3600;

/**
 * How long a due source that a fork's lineage still names is held (pinned) before it is looked at
 * again: purging the fork's lineage unpins it at once; this bounds the wait if that ever misses it.
 */
export const PURGE_PIN_RECHECK_S = 24 * 3600;

/**
 * The steps of one batch, in order, each the lib that owns the tables. What a row references is
 * deleted after it: events, spans and the environment's rows first (they name turns, and the
 * workspace versions a turn committed are detached from it), then the files (tombstoned for the
 * files sweep; an input a file names waits for it), the session's own budget, then the aggregate's tables children first
 * (the engine's own order: receipts, items, steps, runs, inputs, turns, signals, lineage), and
 * then the `sessions` rows (SessionPurgeRepository.removeSessions), only where nothing references them any more.
 */
export const SESSION_PURGE_STEPS = [
  { step: 'events', tables: ['session_events'] },
  { step: 'spans', tables: ['session_spans'] },
  { step: 'environment', tables: ['session_artifacts', 'workspace_versions', 'workspaces'] },
  { step: 'files', tables: ['files'] },
  { step: 'budgets', tables: ['budgets'] },
  {
    step: 'aggregate',
    tables: ['idempotency_receipts', 'items', 'model_requests', 'run_steps', 'runs', 'inputs', 'turns', 'cooperation_signals', 'session_lineage'],
  },
] as const;

export type SessionPurgeStep = (typeof SESSION_PURGE_STEPS)[number]['step'];

/**
 * Whether a deleted session is due for purge, as the SQL says it (SessionPurgeRepository): deleted,
 * more than `graceS` ago by the lifecycle clock (strictly), and named as ancestor by no lineage row.
 */
export function isPurgeDue(session: { deletedAt: Date | null; isAncestor: boolean }, lifecycleNow: Date, graceS: number): boolean {
  if (session.deletedAt === null || session.isAncestor) return false;
  return session.deletedAt.getTime() < lifecycleNow.getTime() - graceS * 1000;
}

/**
 * What a batch leads to: `more` while it removed anything (another batch may find more, of these
 * sessions or the next ones); when it found sessions but moved nothing at all (their last rows wait
 * for the files sweep, or a project's attachment names them), they are `held`: looked at again after
 * fresh due sessions, so they never starve them, and the tick stops.
 */
export function purgeBatchOutcome(candidates: number, rowsRemoved: number, sessionsRemoved: number): { more: boolean; hold: boolean } {
  const moved = rowsRemoved + sessionsRemoved > 0;
  return { more: moved, hold: candidates > 0 && !moved };
}
