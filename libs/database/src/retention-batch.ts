import { prepared } from './prepared.js';
import type { RetentionBatch } from './retention.js';
import { deleteRowsBatch, type StorageQueryable } from './row-storage.js';

/**
 * The rows of one table a retention task removes: `due` is a condition on the table's own columns
 * whose first parameter ($1) is the retention in seconds, compared with `lifecycle_now()`; `order`
 * (oldest first) must be an index's order that `due` bounds, so a batch is one index range and an
 * idle probe reads one index entry.
 */
export interface DueRows {
  table: string;
  due: string;
  order: string;
}

/**
 * Deletes at most `limit` due rows, oldest first, in one statement (deleteRowsBatch: picked with
 * SKIP LOCKED, so two sweeps at once remove each row once and never wait on each other; stored
 * bytes summed in the RETURNING, TOASTed values never fetched). `more` when the batch was full: the
 * sweep runs another.
 */
export async function deleteDueBatch(db: StorageQueryable, rows: DueRows, retentionS: number, limit: number): Promise<RetentionBatch> {
  const removed = await deleteRowsBatch(db, rows.table, rows.due, [retentionS], limit, rows.order);
  return { rows: removed.rows, bytes: removed.bytes, more: removed.rows >= limit };
}

/**
 * How long the oldest due row has been due, in seconds (0 when none is): `since` is the column the
 * retention counts from, its minimum read through the index of `order` (one index entry), over the
 * rows `where` keeps (the condition of a partial index; `true` for all).
 */
export async function dueLagSeconds(db: StorageQueryable, table: string, since: string, where: string, retentionS: number): Promise<number> {
  const [row] = (await db.query(
    prepared(`SELECT greatest(0, coalesce(extract(epoch FROM (lifecycle_now() - make_interval(secs => $1)) - min(${since})), 0))::float8 AS lag FROM ${table} WHERE ${where}`),
    [retentionS],
  )) as { lag: number }[];
  return Number(row?.lag ?? 0);
}
