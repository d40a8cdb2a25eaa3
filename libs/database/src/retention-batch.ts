import { prepared } from './prepared.js';
import type { RetentionBatch } from './retention.js';
import { rowBytesSql, type StorageQueryable } from './row-storage.js';

/**
 * The rows of one table a retention task removes: `due` is a condition on the table's own columns
 * whose first parameter ($1) is the retention in seconds, compared with `lifecycle_now()`; `order`
 * (oldest first) must be an index's order that `due` bounds, so a batch is one index range and an
 * idle probe reads one index entry.
 */
export interface DueRows {
  table: string;
  /** The primary key (one column): how a picked row is deleted. */
  key: string;
  due: string;
  order: string;
}

/**
 * Deletes at most `limit` due rows, oldest first, in one statement, and reports their stored bytes
 * (rowBytesSql, summed in the RETURNING: TOASTed values are never fetched). Rows another worker
 * holds are skipped (SKIP LOCKED): two sweeps at once remove each row once and never wait on each
 * other. `more` when the batch was full: the sweep runs another.
 */
export async function deleteDueBatch(db: StorageQueryable, rows: DueRows, retentionS: number, limit: number): Promise<RetentionBatch> {
  const { table, key, due, order } = rows;
  const sql = `WITH picked AS (SELECT ${key} FROM ${table} WHERE ${due} ORDER BY ${order} LIMIT $2 FOR UPDATE SKIP LOCKED),
      gone AS (DELETE FROM ${table} t USING picked WHERE t.${key} = picked.${key} RETURNING ${await rowBytesSql(db, table)} AS bytes)
    SELECT count(*)::int AS rows, coalesce(sum(bytes), 0)::bigint AS bytes FROM gone`;
  const [row] = (await db.query(prepared(sql), [retentionS, limit])) as { rows: number; bytes: string }[];
  const removed = row?.rows ?? 0;
  return { rows: removed, bytes: Number(row?.bytes ?? 0), more: removed >= limit };
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
