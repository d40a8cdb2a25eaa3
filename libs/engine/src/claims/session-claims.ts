import type { EntityManager } from 'typeorm';
import { budgetedSql } from '#libs/budgets';
import { isUuid, prepared, shiftParams, type SqlFragment } from '#libs/database';
import { ACCOUNT_LOCK_SEED, ACCOUNT_OF, ACCOUNT_RUNNING_TURNS } from './account-sql.js';
import { SESSION_COLUMNS, type SessionEntity, sessionFromRow, type TurnSummary } from '../tables/session.entity.js';

/** What a claim read under the session lock: the session, its account, and the rows of the queue read with it. */
export interface ClaimRead {
  session: SessionEntity;
  /** The session's account (its product user); null without a cap. */
  accountId: string | null;
  /**
   * Whether the queue rows are current: false when the session row changed while the lock was
   * awaited (the rows read with it are then of the statement's older snapshot, and are read again).
   */
  fresh: boolean;
  queue: Record<string, unknown>[];
  /** Whether a budget covers the session: only then does its turn pay for checks before its calls. */
  budgeted: boolean;
}

/**
 * The session lock for a claim, with the session's queue in the same statement (`queue`: a
 * subquery over `sessions.id`, parameters from $1, naming its `columns`). With `lockFrom` (a cap
 * on running turns per account is on) the same statement reads the session's account (its product
 * user; an app end user's is the product user behind the app) and, once the account runs
 * `lockFrom` turns or more, takes an advisory lock keyed by it, held to commit: near its cap the
 * account's claims count each other's turns (`turnStartedWrite`) one at a time across the fleet,
 * so the cap is strict there; further below it they do not wait on each other. Every writer of
 * the queue changes the session row under this lock, so an unchanged row (xmin) means the queue
 * rows of the statement's snapshot are the current ones. `budgeted`: whether any budget covers the
 * session (an index probe in the same statement, so a session without one pays nothing more for
 * budgets anywhere in its turn). A session with no pending input and no
 * active turn (per its counters and overview, written under this lock) has nothing to claim: no
 * row, and nothing is locked (a claim that finds nothing costs no transaction id).
 */
export async function lockForClaim(
  manager: EntityManager,
  sessionId: string,
  lockFrom: number | null,
  queue: { sql: string; params: unknown[]; columns: string },
  terminalTurnStatuses: readonly string[],
): Promise<ClaimRead | null> {
  if (!isUuid(sessionId)) return null;
  const rows = (await manager.query(
    prepared(`SELECT ${SESSION_COLUMNS}, acct.account_id, sessions.xmin = (SELECT s0.xmin FROM sessions s0 WHERE s0.id = $1) AS fresh, ${budgetedSql('sessions')} AS budgeted, ${queue.columns}
     FROM sessions
     LEFT JOIN LATERAL (SELECT u.account_id,
         CASE WHEN (${ACCOUNT_RUNNING_TURNS('u.account_id')}) >= $3::int
           THEN pg_advisory_xact_lock(hashtextextended(u.account_id::text, ${ACCOUNT_LOCK_SEED})) END AS locked
       FROM (${ACCOUNT_OF('sessions.owner_id')}) u WHERE $2) acct ON true
     LEFT JOIN LATERAL (${shiftParams(queue.sql, 4)}) q ON true
     WHERE sessions.id = $1 AND (sessions.pending_input_count > 0 OR (sessions.current_turn IS NOT NULL AND NOT (sessions.current_turn->>'status' = ANY($4::text[]))))
     FOR UPDATE OF sessions`),
    [sessionId, lockFrom !== null, lockFrom ?? 0, terminalTurnStatuses, ...queue.params],
  )) as Record<string, unknown>[];
  const row = rows[0];
  if (!row) return null;
  return { session: sessionFromRow(row), accountId: (row.account_id as string | null) ?? null, fresh: row.fresh === true, queue: rows, budgeted: row.budgeted === true };
}

/**
 * A turn started (composed into the claim's one write, under the session lock): the next turn
 * number, `itemCount` item sequence numbers for its first items, the consumed inputs leave the
 * queue, and the overview moves. `account.cap` (> 0: the cap on the account's running turns,
 * `lockForClaim` serialising its claims near it): the same statement counts the account's running
 * turns (those committed; not the one this statement inserts) and returns `admitted` false at the
 * cap, and the claim rolls back. A cap of 0 never evaluates the count.
 */
export function turnStartedWrite(
  sessionId: string,
  turn: TurnSummary,
  consumedInputs: number,
  itemCount: number,
  at: Date,
  account: { accountId: string | null; cap: number },
): SqlFragment {
  return {
    sql: `UPDATE sessions SET turn_seq = turn_seq + 1, item_seq = item_seq + $2, pending_input_count = pending_input_count - $3,
            current_turn = $4, last_active_at = GREATEST(last_active_at, $5)
     WHERE id = $1 RETURNING turn_seq, ($7::int = 0 OR (${ACCOUNT_RUNNING_TURNS('$6::uuid')}) < $7::int) AS admitted`,
    params: [sessionId, itemCount, consumedInputs, JSON.stringify(turn), at, account.accountId, account.cap],
  };
}

/**
 * A turn stopped running (composed into its settle's one write, under the session lock), as
 * `SessionsRepository.recordTurnFreed`: `itemCount` item sequence numbers (the caller read the
 * counter under the lock), the overview, unread; with `accountCap` > 0 it returns
 * `crowded_account`, the account when it was at its cap of running turns.
 */
export function turnFreedWrite(sessionId: string, turn: TurnSummary, itemCount: number, at: Date, accountCap: number): SqlFragment {
  return {
    sql: `UPDATE sessions SET item_seq = item_seq + $2, current_turn = $3, unread = true, last_active_at = GREATEST(last_active_at, $4)
     WHERE id = $1
     RETURNING item_seq, CASE WHEN $5::int > 0 AND (${ACCOUNT_RUNNING_TURNS(`(${ACCOUNT_OF('sessions.owner_id')})`)}) >= $5::int - 1
       THEN (${ACCOUNT_OF('sessions.owner_id')}) END AS crowded_account`,
    params: [sessionId, itemCount, JSON.stringify(turn), at, accountCap],
  };
}

/** The next run of an active turn started (composed into a yield's one write, under the session lock), as `SessionsRepository.recordRunStarted`. */
export function runStartedWrite(sessionId: string, turn: TurnSummary, consumedInputs: number, itemCount: number, at: Date): SqlFragment {
  return {
    sql: `UPDATE sessions SET item_seq = item_seq + $2, pending_input_count = pending_input_count - $3, current_turn = $4,
            last_active_at = GREATEST(last_active_at, $5)
     WHERE id = $1`,
    params: [sessionId, itemCount, consumedInputs, JSON.stringify(turn), at],
  };
}
