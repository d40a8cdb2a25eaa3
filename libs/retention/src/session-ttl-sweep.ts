import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { prepared, type RetentionBatch, type RetentionTask } from '#libs/database';
import { DomainError } from '#libs/errors';
import { SessionControls, SessionsRepository, ttlNextCheckSql } from '#libs/engine';
import { DeleteSession } from '#libs/protocol';

// Due by the lifecycle clock: idle (since last_active_at) longer than the TTL. Read under the session lock.
const DELETE_DUE = `(s.ttl_delete_after_s IS NOT NULL AND s.last_active_at + make_interval(secs => s.ttl_delete_after_s) <= lifecycle_now())`;
const ARCHIVE_DUE = `(s.ttl_archive_after_s IS NOT NULL AND NOT s.archived AND s.last_active_at + make_interval(secs => s.ttl_archive_after_s) <= lifecycle_now())`;

/**
 * The sessions whose check is due, earliest first: a range of sessions_ttl_check_idx holding only
 * those (a check is never later than the TTL can act, and is pushed forward by every look), so a
 * tick reads what it acts on and not the sessions still idle short of their TTL.
 */
const CANDIDATES_SQL = `SELECT id FROM sessions WHERE ttl_check_at <= lifecycle_now() ORDER BY ttl_check_at LIMIT $1`;
/** Under the session lock: what is due now (an input or a turn since the check was written moved last_active_at). */
const DUE_NOW_SQL = `SELECT ${DELETE_DUE} AS delete_due, ${ARCHIVE_DUE} AS archive_due FROM sessions s WHERE s.id = $1 AND s.deleted_at IS NULL`;
/**
 * Under the session lock, after acting or finding nothing due: the next look, from last_active_at as
 * it is now (activity since: the real deadline; archived: the delete's; deleted or nothing left: null).
 */
const RECHECK_SQL = `UPDATE sessions SET ttl_check_at = ${ttlNextCheckSql()} WHERE id = $1`;
/**
 * A session postponed by work in its tree: looked at again after `$2` seconds (one sweep interval),
 * not in this tick's later batches, so the busy never fill every batch ahead of the idle. From the
 * earlier of the two clocks: a postponement made while a test had the lifecycle clock moved ahead
 * must not outlast the clock's return by the whole offset.
 */
const POSTPONE_SQL = `UPDATE sessions SET ttl_check_at = LEAST(now(), lifecycle_now()) + make_interval(secs => $2) WHERE id = $1 AND ttl_check_at IS NOT NULL`;
/** How long the earliest due check has waited: the index's first entry. */
const LAG_SQL = `SELECT COALESCE(EXTRACT(EPOCH FROM lifecycle_now() - min(ttl_check_at)), 0)::float8 AS lag FROM sessions WHERE ttl_check_at <= lifecycle_now()`;

type Outcome = 'archived' | 'deleted' | 'rechecked' | 'postponed';

/**
 * The `session_ttl` retention task (README "Session TTL"): archives the roots idle longer than
 * their archive TTL and deletes (soft delete, with their tree) those idle longer than their delete
 * TTL, by the lifecycle clock. Each session in a transaction of its own, through the API's own
 * transitions: the archive of SessionControls (what `POST …/archive` runs) and DeleteSession's
 * delete (what `DELETE …/sessions/{id}` runs), so every rule of theirs holds; an active turn or a
 * pending input found under the lock postpones the session (their 409, nothing written) to a later
 * sweep (its check moved one sweep interval on). A session found not due (activity since its check
 * was written) gets its check moved to its real deadline. Any number of workers may run it: the
 * second to lock a session finds it done. Bytes: 0 (a soft delete removes no row; the
 * `deleted_sessions` purge counts them later).
 */
@Injectable()
export class SessionTtlSweep implements RetentionTask {
  readonly kind = 'session_ttl' as const;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly controls: SessionControls,
    private readonly deleteSession: DeleteSession,
    private readonly config: AppConfig,
  ) {}

  async runBatch(limit: number): Promise<RetentionBatch> {
    const candidates = (await this.dataSource.query(prepared(CANDIDATES_SQL), [limit])) as { id: string }[];
    let rows = 0;
    for (const { id } of candidates) {
      const outcome = await this.expire(id);
      if (outcome === 'archived' || outcome === 'deleted') rows += 1;
    }
    return { rows, bytes: 0, more: candidates.length === limit };
  }

  async lagSeconds(): Promise<number> {
    const [row] = (await this.dataSource.query(prepared(LAG_SQL))) as { lag: number }[];
    return Math.max(0, Math.round(Number(row?.lag ?? 0)));
  }

  /**
   * Archives or deletes one root if it is still due under its lock, and writes its next check;
   * postponed while its tree has work (their 409 rolled back the transaction: the check moves in a
   * statement of its own).
   */
  private async expire(sessionId: string): Promise<Outcome> {
    try {
      return await this.dataSource.transaction(async (manager): Promise<Outcome> => {
        const session = await this.sessions.lock(manager, sessionId);
        let outcome: Outcome = 'rechecked';
        if (session && session.deletedAt === null && session.depth === 0) {
          const [due] = (await manager.query(prepared(DUE_NOW_SQL), [sessionId])) as { delete_due: boolean; archive_due: boolean }[];
          if (due?.delete_due) {
            await this.deleteSession.deleteLocked(manager, session);
            outcome = 'deleted';
          } else if (due?.archive_due) {
            await this.controls.archive(manager, session);
            outcome = 'archived';
          }
        }
        await manager.query(prepared(RECHECK_SQL), [sessionId]);
        return outcome;
      });
    } catch (error) {
      // An active turn or a pending input (found under the lock): postponed, nothing else was written.
      // Any other failure postpones it too before it fails the batch: one session that always
      // throws stays out of the next batches' way instead of heading every one of them.
      const retryS = Math.max(1, Math.ceil(this.config.retentionSweepMs / 1000));
      const conflict = error instanceof DomainError && error.code === 'state_conflict';
      try {
        await this.dataSource.query(prepared(POSTPONE_SQL), [sessionId, retryS]);
      } catch (postponeError) {
        if (conflict) throw postponeError;
      }
      if (!conflict) throw error;
      return 'postponed';
    }
  }
}
