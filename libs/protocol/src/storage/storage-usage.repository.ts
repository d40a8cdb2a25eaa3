import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import { EventOutbox } from '#libs/events';
import { type TotalDelta, totalDeltas, type UsageContribution } from './storage-deltas.js';

/** Outbox rows read per mark to find the sessions active since the last look. */
const ACTIVE_WINDOW_ROWS = 5000;
/** How long an owner's totals go, at least, between two full re-sums (the slow correction of the deltas). */
const RESUM_EVERY_S = 3600;

/** A session queued for measurement, as the accounting reads it. */
export interface StaleUsage {
  sessionId: string;
  workdirId: string;
  deleted: boolean;
  /** When the queue was read: a measurement clears only marks older than this. */
  seen: Date;
}

/**
 * The storage accounting's tables (issue 43): `storage_usage` (each session's bytes and rows as
 * last measured; `counted`: whether they are in its owner's totals) and `storage_totals` (per owner,
 * project '', and per owner's project). The totals move by deltas, each in the transaction that
 * changes a usage row: a measurement adds what changed, a delete takes a session out at its next
 * measurement, a purge takes out what its rows still counted. A full re-sum of a few owners per
 * batch (`resum`) is only the slow correction.
 *
 * Lock order, for every writer: the usage rows, then the totals in totalDeltas' order (an owner's
 * '' total before its projects'). The re-sum takes the owner's '' total first and reads the usage
 * rows after it, so a delta is either in what it reads or applied on top of what it writes.
 */
@Injectable()
export class StorageUsageRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly outbox: EventOutbox,
  ) {}

  /**
   * Reads the outbox since the accounting watermark and queues the sessions active since (a new
   * session gets its row), under the watermark's row lock (one worker at a time; another skips
   * it). True when the window reached now.
   */
  markActive(): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const [state] = (await manager.query(prepared(`SELECT accounted_until FROM storage_accounting_state WHERE id = 1 FOR UPDATE SKIP LOCKED`))) as { accounted_until: Date }[];
      if (!state) return true;
      const { sessionIds, upto, full } = await this.outbox.sessionsWithEvents(state.accounted_until, ACTIVE_WINDOW_ROWS, manager);
      if (sessionIds.length > 0) {
        await manager.query(
          prepared(`INSERT INTO storage_usage (session_id, owner_id, project_id, stale_since, marked_at)
           SELECT id, owner_id, project_id, now(), now() FROM sessions WHERE id = ANY($1::uuid[]) ORDER BY id
           ON CONFLICT (session_id) DO UPDATE SET stale_since = coalesce(storage_usage.stale_since, EXCLUDED.stale_since), marked_at = EXCLUDED.marked_at`),
          [sessionIds],
        );
      }
      await manager.query(prepared(`UPDATE storage_accounting_state SET accounted_until = $1 WHERE id = 1`), [upto]);
      return !full;
    });
  }

  /**
   * Queues the sessions just deleted (in the delete's transaction) so that the next accounting pass
   * takes them out of their owners' totals: a delete writes no event the outbox mark would see.
   * marked_at moves on every mark (a measurement clears only marks older than itself); stale_since
   * keeps the first (the queue's order).
   */
  async markDeleted(manager: EntityManager, sessionIds: string[]): Promise<void> {
    if (sessionIds.length === 0) return;
    // The rows locked in session id order, as the accounting's marks take them (ORDER BY id): two marks of one tree never deadlock.
    await manager.query(
      prepared(`UPDATE storage_usage u SET stale_since = coalesce(u.stale_since, now()), marked_at = now()
       FROM (SELECT session_id FROM storage_usage WHERE session_id = ANY($1::uuid[]) ORDER BY session_id FOR UPDATE) o WHERE u.session_id = o.session_id`),
      [sessionIds],
    );
  }

  /** Up to `count` queued sessions, oldest mark first (deleted ones too: they are taken out of the totals). */
  async stale(count: number): Promise<StaleUsage[]> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT u.session_id, s.workdir_id, s.deleted_at IS NOT NULL AS deleted, now() AS seen
       FROM storage_usage u JOIN sessions s ON s.id = u.session_id
       WHERE u.stale_since IS NOT NULL ORDER BY u.stale_since LIMIT $1`),
      [count],
    )) as { session_id: string; workdir_id: string; deleted: boolean; seen: Date }[];
    return rows.map((row) => ({ sessionId: row.session_id, workdirId: row.workdir_id, deleted: row.deleted, seen: row.seen }));
  }

  /** A session that could not be measured (too large to read in time, a failed read) goes to the back of the queue. */
  async requeue(sessionId: string): Promise<void> {
    await this.dataSource.query(prepared(`UPDATE storage_usage SET stale_since = now() WHERE session_id = $1`), [sessionId]);
  }

  /**
   * Records a session's measurement (`measured` null: keep the figures last measured), and applies
   * what changed to its owner's totals, in one transaction: a live session counts what was
   * measured, a deleted one (as it is now, under the row's lock) no longer counts at all.
   */
  async record(usage: StaleUsage, measured: { bytes: number; rows: number } | null): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      // The usage row's lock first, then the session read in a statement of its own: a delete that
      // held the lock (markDeleted) has committed by then, and a new statement's snapshot sees it (a
      // join locked in one statement would re-check only the locked row and keep the old session).
      const [usageRow] = (await manager.query(
        prepared(`SELECT owner_id, project_id, bytes, rows, counted, measured_at > $2 AS newer FROM storage_usage WHERE session_id = $1 FOR UPDATE`),
        [usage.sessionId, usage.seen],
      )) as { owner_id: string; project_id: string | null; bytes: string; rows: string; counted: boolean; newer: boolean | null }[];
      // Gone, or another worker's measurement, begun after this one, already recorded: this older one must not overwrite it.
      if (!usageRow || usageRow.newer === true) return;
      const [session] = (await manager.query(prepared(`SELECT owner_id, project_id, deleted_at IS NOT NULL AS deleted FROM sessions WHERE id = $1`), [usage.sessionId])) as {
        owner_id: string;
        project_id: string | null;
        deleted: boolean;
      }[];
      if (!session) return;
      const row = { ...usageRow, session_owner_id: session.owner_id, session_project_id: session.project_id, deleted: session.deleted };
      const bytes = measured?.bytes ?? Number(row.bytes);
      const rows = measured?.rows ?? Number(row.rows);
      const before: UsageContribution | null = row.counted ? { ownerId: row.owner_id, projectId: row.project_id, bytes: Number(row.bytes), rows: Number(row.rows) } : null;
      const after: UsageContribution | null = row.deleted ? null : { ownerId: row.session_owner_id, projectId: row.session_project_id, bytes, rows };
      await manager.query(
        prepared(`UPDATE storage_usage SET bytes = $2, rows = $3, owner_id = $4, project_id = $5, counted = $6,
           measured_at = CASE WHEN $7 THEN now() ELSE measured_at END,
           stale_since = CASE WHEN marked_at IS NULL OR marked_at <= $8 THEN NULL ELSE stale_since END
         WHERE session_id = $1`),
        [usage.sessionId, bytes, rows, row.session_owner_id, row.session_project_id, after !== null, measured !== null, usage.seen],
      );
      await this.applyDeltas(manager, totalDeltas([{ before, after }]));
    });
  }

  /**
   * Before a purge removes sessions: their usage rows go, and what they still counted (a session
   * purged before the accounting took its delete into account) leaves the totals, in one
   * transaction. Returns the rows removed.
   */
  async removeSessions(sessionIds: string[]): Promise<number> {
    if (sessionIds.length === 0) return 0;
    return this.dataSource.transaction(async (manager) => {
      const removed = (await manager.query(
        prepared(`DELETE FROM storage_usage WHERE session_id IN (SELECT session_id FROM storage_usage WHERE session_id = ANY($1::uuid[]) ORDER BY session_id FOR UPDATE)
         RETURNING owner_id, project_id, bytes, rows, counted`),
        [sessionIds],
      )) as { owner_id: string; project_id: string | null; bytes: string; rows: string; counted: boolean }[];
      const changes = removed
        .filter((row) => row.counted)
        .map((row) => ({ before: { ownerId: row.owner_id, projectId: row.project_id, bytes: Number(row.bytes), rows: Number(row.rows) }, after: null }));
      await this.applyDeltas(manager, totalDeltas(changes));
      return removed.length;
    });
  }

  /**
   * The slow correction: re-sums the totals of up to `count` owners not re-summed for RESUM_EVERY_S
   * (never re-summed first) from their counted usage rows (the usage index only), one owner per
   * transaction; a total whose sessions are all gone is removed. Bounded: `count` owners, each its
   * own rows once an hour at most.
   */
  async resum(count: number): Promise<void> {
    const owners = (await this.dataSource.query(
      prepared(`SELECT owner_id FROM storage_totals WHERE project_id = '' AND (resummed_at IS NULL OR resummed_at < now() - make_interval(secs => $1))
       ORDER BY resummed_at NULLS FIRST LIMIT $2`),
      [RESUM_EVERY_S, count],
    )) as { owner_id: string }[];
    for (const { owner_id: ownerId } of owners) {
      await this.dataSource.transaction(async (manager) => {
        // The '' total's lock first: every delta of this owner waits for it, and the sums below (a new snapshot) see every delta committed before.
        const [locked] = (await manager.query(prepared(`SELECT 1 AS locked FROM storage_totals WHERE owner_id = $1 AND project_id = '' FOR UPDATE SKIP LOCKED`), [ownerId])) as unknown[];
        if (!locked) return;
        await manager.query(
          prepared(`WITH sums AS (
             SELECT u.owner_id, CASE WHEN GROUPING(u.project_id) = 1 THEN '' ELSE u.project_id END AS project_id,
                    sum(u.bytes)::bigint AS bytes, sum(u.rows)::bigint AS rows, count(*)::int AS sessions, max(u.measured_at) AS measured_at
             FROM storage_usage u WHERE u.owner_id = $1 AND u.counted
             GROUP BY GROUPING SETS ((u.owner_id), (u.owner_id, u.project_id))
             HAVING GROUPING(u.project_id) = 1 OR u.project_id IS NOT NULL),
           gone AS (
             DELETE FROM storage_totals t WHERE t.owner_id = $1
               AND NOT EXISTS (SELECT 1 FROM sums WHERE sums.project_id = t.project_id))
           INSERT INTO storage_totals (owner_id, project_id, bytes, rows, sessions, measured_at, summed_at, resummed_at)
           SELECT owner_id, project_id, bytes, rows, sessions, measured_at, now(), now() FROM sums ORDER BY project_id
           ON CONFLICT (owner_id, project_id) DO UPDATE SET bytes = EXCLUDED.bytes, rows = EXCLUDED.rows, sessions = EXCLUDED.sessions,
             measured_at = EXCLUDED.measured_at, resummed_at = EXCLUDED.resummed_at,
             summed_at = CASE WHEN (storage_totals.bytes, storage_totals.rows, storage_totals.sessions) = (EXCLUDED.bytes, EXCLUDED.rows, EXCLUDED.sessions)
                              THEN storage_totals.summed_at ELSE EXCLUDED.summed_at END`),
          [ownerId],
        );
      });
    }
  }

  /** How long the oldest activity not yet measured has waited: the watermark's age, or an older mark's. */
  async lagSeconds(): Promise<number> {
    const [row] = (await this.dataSource.query(
      prepared(`SELECT greatest(extract(epoch FROM now() - (SELECT accounted_until FROM storage_accounting_state WHERE id = 1)),
                                extract(epoch FROM now() - (SELECT min(stale_since) FROM storage_usage WHERE stale_since IS NOT NULL)), 0)::float8 AS lag`),
    )) as { lag: number | null }[];
    return Number(row?.lag ?? 0);
  }

  /**
   * Adds the deltas to the totals, in their (lock) order; a total left with no session is removed.
   * A total that does not exist yet starts at its delta (an owner's first measured session).
   */
  private async applyDeltas(db: EntityManager, deltas: TotalDelta[]): Promise<void> {
    if (deltas.length === 0) return;
    const owners = deltas.map((d) => d.ownerId);
    const projects = deltas.map((d) => d.projectId);
    await db.query(
      prepared(`INSERT INTO storage_totals AS t (owner_id, project_id, bytes, rows, sessions, measured_at, summed_at)
       SELECT owner_id, project_id, bytes, rows, sessions, now(), now()
       FROM unnest($1::uuid[], $2::varchar[], $3::bigint[], $4::bigint[], $5::int[]) WITH ORDINALITY AS d (owner_id, project_id, bytes, rows, sessions, ord)
       ORDER BY ord
       ON CONFLICT (owner_id, project_id) DO UPDATE SET bytes = t.bytes + EXCLUDED.bytes, rows = t.rows + EXCLUDED.rows,
         sessions = t.sessions + EXCLUDED.sessions, measured_at = now(), summed_at = now()`),
      [owners, projects, deltas.map((d) => d.bytes), deltas.map((d) => d.rows), deltas.map((d) => d.sessions)],
    );
    // A separate statement: a data-modifying WITH would not see the rows the upsert just wrote.
    await db.query(
      prepared(`DELETE FROM storage_totals t USING unnest($1::uuid[], $2::varchar[]) AS d (owner_id, project_id)
       WHERE t.owner_id = d.owner_id AND t.project_id = d.project_id AND t.sessions <= 0`),
      [owners, projects],
    );
  }
}
