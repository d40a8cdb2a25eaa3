import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { prepared, type RetentionBatch, type RetentionTask } from '#libs/database';
import { DomainError } from '#libs/errors';
import { ACTIVE_TURN_STATUSES, SessionControls, SessionsRepository, sqlList } from '#libs/engine';
import { DeleteSession } from '#libs/protocol';
import { TTL_MIN_S } from '#libs/agents';

// Due by the lifecycle clock: idle (since last_active_at) longer than the TTL.
const DELETE_DUE = `(s.ttl_delete_after_s IS NOT NULL AND s.last_active_at + make_interval(secs => s.ttl_delete_after_s) <= lifecycle_now())`;
const ARCHIVE_DUE = `(s.ttl_archive_after_s IS NOT NULL AND NOT s.archived AND s.last_active_at + make_interval(secs => s.ttl_archive_after_s) <= lifecycle_now())`;
/**
 * The live roots the TTL has something left to do on (the predicate of sessions_ttl_idle_idx),
 * idle at least the shortest TTL (an index range on last_active_at), due, and not postponed: no
 * pending input, no active turn (turns_one_active_per_session). Postponed ones are left out here,
 * so a batch is never filled with sessions it cannot act on; members' work is checked under the
 * tree's locks (DeleteSession).
 */
const DUE_ROOTS = `s.deleted_at IS NULL AND s.depth = 0 AND (s.ttl_delete_after_s IS NOT NULL OR (s.ttl_archive_after_s IS NOT NULL AND NOT s.archived))
  AND s.last_active_at <= lifecycle_now() - make_interval(secs => ${TTL_MIN_S})
  AND (${DELETE_DUE} OR ${ARCHIVE_DUE})
  AND s.pending_input_count = 0
  AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.status IN (${sqlList(ACTIVE_TURN_STATUSES)}))`;

const CANDIDATES_SQL = `SELECT s.id FROM sessions s WHERE ${DUE_ROOTS} ORDER BY s.last_active_at LIMIT $1`;
/** Under the session lock: what is due now (an input or a turn since the candidates were read moved last_active_at). */
const DUE_NOW_SQL = `SELECT ${DELETE_DUE} AS delete_due, ${ARCHIVE_DUE} AS archive_due FROM sessions s WHERE s.id = $1 AND s.deleted_at IS NULL`;
/** How long the most overdue of the oldest idle TTL sessions has been due (bounded: the first 100 by the index). */
const LAG_SQL = `SELECT COALESCE(max(EXTRACT(EPOCH FROM lifecycle_now() - due)), 0)::float8 AS lag FROM (
    SELECT LEAST(
      CASE WHEN s.ttl_delete_after_s IS NOT NULL THEN s.last_active_at + make_interval(secs => s.ttl_delete_after_s) END,
      CASE WHEN s.ttl_archive_after_s IS NOT NULL AND NOT s.archived THEN s.last_active_at + make_interval(secs => s.ttl_archive_after_s) END) AS due
    FROM sessions s WHERE ${DUE_ROOTS} ORDER BY s.last_active_at LIMIT 100) d`;

type Outcome = 'archived' | 'deleted' | 'skipped';

/**
 * The `session_ttl` retention task (README "Session TTL"): archives the roots idle longer than
 * their archive TTL and deletes (soft delete, with their tree) those idle longer than their delete
 * TTL, by the lifecycle clock. Each session in a transaction of its own, through the API's own
 * transitions: the archive of SessionControls (what `POST …/archive` runs) and DeleteSession's
 * delete (what `DELETE …/sessions/{id}` runs), so every rule of theirs holds; an active turn or a
 * pending input found under the lock postpones the session (their 409, nothing written) to a later
 * sweep. Any number of workers may run it: the second to lock a session finds it done. Bytes: 0
 * (a soft delete removes no row; the `deleted_sessions` purge counts them later).
 */
@Injectable()
export class SessionTtlSweep implements RetentionTask {
  readonly kind = 'session_ttl' as const;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly controls: SessionControls,
    private readonly deleteSession: DeleteSession,
  ) {}

  async runBatch(limit: number): Promise<RetentionBatch> {
    const candidates = (await this.dataSource.query(prepared(CANDIDATES_SQL), [limit])) as { id: string }[];
    let rows = 0;
    for (const { id } of candidates) if ((await this.expire(id)) !== 'skipped') rows += 1;
    return { rows, bytes: 0, more: candidates.length === limit };
  }

  async lagSeconds(): Promise<number> {
    const [row] = (await this.dataSource.query(prepared(LAG_SQL))) as { lag: number }[];
    return Math.max(0, Math.round(Number(row?.lag ?? 0)));
  }

  /** Archives or deletes one root if it is still due under its lock; postponed (skipped) while it has work. */
  private async expire(sessionId: string): Promise<Outcome> {
    try {
      return await this.dataSource.transaction(async (manager): Promise<Outcome> => {
        const session = await this.sessions.lock(manager, sessionId);
        if (!session || session.deletedAt !== null || session.depth > 0) return 'skipped';
        const [due] = (await manager.query(prepared(DUE_NOW_SQL), [sessionId])) as { delete_due: boolean; archive_due: boolean }[];
        if (due?.delete_due) {
          await this.deleteSession.deleteLocked(manager, session);
          return 'deleted';
        }
        if (due?.archive_due) {
          await this.controls.archive(manager, session);
          return 'archived';
        }
        return 'skipped';
      });
    } catch (error) {
      // An active turn or a pending input (found under the lock): postponed, nothing was written.
      if (error instanceof DomainError && error.code === 'state_conflict') return 'skipped';
      throw error;
    }
  }
}
