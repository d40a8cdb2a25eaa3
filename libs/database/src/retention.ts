import type { DataSource } from 'typeorm';
import { prepared } from './prepared.js';

/**
 * The kinds of data a retention task removes: the `kind` label of the retention metrics (a closed
 * set). Each kind is one task, owned by the lib that owns its tables. `storage_accounting` removes
 * nothing (0 rows, 0 bytes): it measures active sessions' storage on the same schedule, and its lag
 * is how far behind that measurement is.
 */
export const RETENTION_KINDS = ['deleted_sessions', 'model_requests', 'cooperation_signals', 'audit', 'session_ttl', 'storage_accounting'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** What one batch of a retention task did. */
export interface RetentionBatch {
  /** Rows removed (for session_ttl: sessions archived or deleted). */
  rows: number;
  /** Stored bytes of the removed rows (per-column pg_column_size + tuple header, as rowStorageSql counts; 0 where not measured). */
  bytes: number;
  /** True when more is due right now: the sweep runs another batch (up to its per-tick bound). */
  more: boolean;
}

/**
 * A retention task: removes, in batches of at most `limit` rows in short transactions, what its
 * setting says has aged out, by the lifecycle clock (`lifecycle_now()`). Any number of workers may
 * run the same task at once: a row two of them pick is removed once, and a batch killed midway
 * leaves nothing half-done that the next batch cannot finish (a task deletes children before the
 * row they belong to). RetentionSweep (libs/retention) runs every task each RETENTION_SWEEP_MS.
 */
export interface RetentionTask {
  readonly kind: RetentionKind;
  runBatch(limit: number): Promise<RetentionBatch>;
  /** Seconds the oldest row due for removal has been due (0 when nothing is due): the lag gauge. One indexed statement. */
  lagSeconds(): Promise<number>;
}

/** The furthest an administrator may move the lifecycle clock, either way: two years. */
export const LIFECYCLE_CLOCK_MAX_OFFSET_S = 2 * 366 * 24 * 3600;

/**
 * The clock session TTLs and retention go by (`lifecycle_now()` in SQL): the database's, moved by
 * an offset where the deployment lets administrators move it (LIFECYCLE_CLOCK_ADJUSTABLE), so tests
 * cross a grace period or a TTL without waiting it out.
 */
export async function setLifecycleClock(dataSource: DataSource, offsetS: number): Promise<{ offsetS: number; now: Date }> {
  const [row] = (await dataSource.query(
    prepared(`WITH moved AS (UPDATE lifecycle_clock SET offset_s = $1 WHERE id = 1 RETURNING offset_s)
     SELECT offset_s, now() + make_interval(secs => offset_s) AS now FROM moved`),
    [offsetS],
  )) as { offset_s: string; now: Date }[];
  return { offsetS: Number(row!.offset_s), now: row!.now };
}
