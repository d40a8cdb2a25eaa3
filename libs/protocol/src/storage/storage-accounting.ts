import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { prepared, type RetentionBatch, type RetentionTask } from '#libs/database';
import { EventOutbox } from '#libs/events';
import { GetSessionStorage } from '../use-cases/session-storage.use-case.js';

/** Sessions measured per batch at most: each measurement reads the session's rows (one heap fetch each), so a batch stays short. */
export const STORAGE_SESSIONS_PER_BATCH = 20;
/** Outbox rows read per batch to find the sessions active since the last look. */
const ACTIVE_WINDOW_ROWS = 5000;
/** Totals re-summed per batch besides those of the owners just measured: the stalest ones (a purged session's owner, among others). */
const RESUMMED_TOTALS = 20;

/**
 * Storage accounting (issue 43): keeps `storage_usage` (each session's bytes and rows, as the
 * session storage route measures them) and `storage_totals` (per owner and per owner's project)
 * current enough for operators and the quota, without ever reading an owner's rows on request.
 *
 * Run by the retention sweep on its schedule (kind `storage_accounting`; it removes nothing). A
 * batch: (1) reads the outbox since the accounting watermark for the sessions active since, and
 * marks their rows stale (a new session gets its row); (2) measures up to
 * STORAGE_SESSIONS_PER_BATCH stale sessions, oldest mark first; (3) re-sums the totals of the
 * owners it measured and of the RESUMMED_TOTALS least recently summed owners (so an owner whose
 * session was purged, which cascades its usage row away, is right again within a few ticks). Every
 * step is bounded; a batch killed midway leaves marks that the next batch measures.
 *
 * What is stored without an outbox event (nothing known today besides a session's files bound with
 * an input, whose input is an event) is measured at the session's next event.
 */
@Injectable()
export class StorageAccounting implements RetentionTask {
  readonly kind = 'storage_accounting' as const;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly outbox: EventOutbox,
    private readonly storage: GetSessionStorage,
  ) {}

  async runBatch(limit: number): Promise<RetentionBatch> {
    const caughtUp = await this.markActive();
    const measured = await this.measureStale(Math.max(1, Math.min(limit, STORAGE_SESSIONS_PER_BATCH)));
    await this.sumTotals(measured.owners);
    return { rows: 0, bytes: 0, more: !caughtUp || measured.full };
  }

  /** How long the oldest activity not yet measured has waited: the watermark's age, or an older mark's. */
  async lagSeconds(): Promise<number> {
    const [row] = (await this.dataSource.query(
      prepared(`SELECT greatest(extract(epoch FROM now() - (SELECT accounted_until FROM storage_accounting_state WHERE id = 1)),
                                extract(epoch FROM now() - (SELECT min(stale_since) FROM storage_usage WHERE stale_since IS NOT NULL)), 0)::float8 AS lag`),
    )) as { lag: number | null }[];
    return Number(row?.lag ?? 0);
  }

  /** Step 1, under the watermark's row lock (one worker at a time; another skips it): true when the window reached now. */
  private markActive(): Promise<boolean> {
    return this.dataSource.transaction(async (manager) => {
      const [state] = (await manager.query(prepared(`SELECT accounted_until FROM storage_accounting_state WHERE id = 1 FOR UPDATE SKIP LOCKED`))) as { accounted_until: Date }[];
      if (!state) return true;
      const { sessionIds, upto, full } = await this.outbox.sessionsWithEvents(state.accounted_until, ACTIVE_WINDOW_ROWS, manager);
      if (sessionIds.length > 0) {
        // marked_at moves on every mark (a measurement clears only marks older than itself); stale_since keeps the first (the queue's order).
        await manager.query(
          prepared(`INSERT INTO storage_usage (session_id, owner_id, project_id, stale_since, marked_at)
           SELECT id, owner_id, project_id, now(), now() FROM sessions WHERE id = ANY($1::uuid[])
           ON CONFLICT (session_id) DO UPDATE SET stale_since = coalesce(storage_usage.stale_since, EXCLUDED.stale_since), marked_at = EXCLUDED.marked_at`),
          [sessionIds],
        );
      }
      await manager.query(prepared(`UPDATE storage_accounting_state SET accounted_until = $1 WHERE id = 1`), [upto]);
      return !full;
    });
  }

  /** Step 2: measures up to `count` stale sessions (deleted ones too: their rows are stored until purged). */
  private async measureStale(count: number): Promise<{ owners: string[]; full: boolean }> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT u.session_id, s.workdir_id, s.owner_id, s.project_id, now() AS seen
       FROM storage_usage u JOIN sessions s ON s.id = u.session_id
       WHERE u.stale_since IS NOT NULL ORDER BY u.stale_since LIMIT $1`),
      [count],
    )) as { session_id: string; workdir_id: string; owner_id: string; project_id: string | null; seen: Date }[];
    const owners = new Set<string>();
    let failure: unknown = null;
    for (const row of rows) {
      let measured;
      try {
        measured = await this.storage.measure(row.session_id, row.workdir_id);
      } catch (error) {
        // A session too large to read in time (or a failed read) goes to the back of the queue, not in the way of the others; the sweep counts the failure.
        await this.dataSource.query(prepared(`UPDATE storage_usage SET stale_since = now() WHERE session_id = $1`), [row.session_id]);
        failure = error;
        continue;
      }
      const { figures, rows: stored } = measured;
      await this.dataSource.query(
        prepared(`UPDATE storage_usage SET bytes = $2, rows = $3, owner_id = $4, project_id = $5, measured_at = now(),
           stale_since = CASE WHEN marked_at IS NULL OR marked_at <= $6 THEN NULL ELSE stale_since END
         WHERE session_id = $1`),
        [row.session_id, figures.total_bytes, stored, row.owner_id, row.project_id, row.seen],
      );
      owners.add(row.owner_id);
    }
    if (failure !== null) {
      await this.sumTotals([...owners]);
      throw failure;
    }
    return { owners: [...owners], full: rows.length === count };
  }

  /**
   * Step 3: the owners' totals (project_id '') and their projects' summed again from their usage
   * rows (the usage index only), and the stalest owners' with them; a total whose sessions are all
   * gone is removed.
   */
  private async sumTotals(measuredOwners: string[]): Promise<void> {
    const stalest = (await this.dataSource.query(
      prepared(`SELECT owner_id FROM storage_totals WHERE project_id = '' AND NOT (owner_id = ANY($1::uuid[])) ORDER BY summed_at LIMIT $2`),
      [measuredOwners, RESUMMED_TOTALS],
    )) as { owner_id: string }[];
    const owners = [...measuredOwners, ...stalest.map((row) => row.owner_id)];
    if (owners.length === 0) return;
    await this.dataSource.query(
      prepared(`WITH sums AS (
         SELECT u.owner_id, CASE WHEN GROUPING(u.project_id) = 1 THEN '' ELSE u.project_id END AS project_id,
                sum(u.bytes)::bigint AS bytes, sum(u.rows)::bigint AS rows, count(*)::int AS sessions, max(u.measured_at) AS measured_at
         FROM storage_usage u WHERE u.owner_id = ANY($1::uuid[])
         GROUP BY GROUPING SETS ((u.owner_id), (u.owner_id, u.project_id))
         HAVING GROUPING(u.project_id) = 1 OR u.project_id IS NOT NULL),
       gone AS (
         DELETE FROM storage_totals t WHERE t.owner_id = ANY($1::uuid[])
           AND NOT EXISTS (SELECT 1 FROM sums WHERE sums.owner_id = t.owner_id AND sums.project_id = t.project_id))
       INSERT INTO storage_totals (owner_id, project_id, bytes, rows, sessions, measured_at, summed_at)
       SELECT owner_id, project_id, bytes, rows, sessions, measured_at, now() FROM sums
       ON CONFLICT (owner_id, project_id) DO UPDATE SET bytes = EXCLUDED.bytes, rows = EXCLUDED.rows, sessions = EXCLUDED.sessions,
         measured_at = EXCLUDED.measured_at, summed_at = EXCLUDED.summed_at`),
      [owners],
    );
  }
}
