import { prepared } from './prepared.js';

/** Rows of one table that belong to something (a session), and the bytes they take as stored. */
export interface RowStorage {
  rows: number;
  bytes: number;
}

/** What the storage reads run on: the DataSource, or a transaction's EntityManager (one snapshot, one connection). */
export interface StorageQueryable {
  query(sql: string, parameters?: unknown[]): Promise<unknown>;
}

/**
 * A row's tuple header (23 bytes and the null bitmap, aligned): added per row, since the per-column
 * sum below leaves it out. Padding between columns is left out too (a few bytes a row at most).
 */
export const TUPLE_HEADER_BYTES = 24;

/** Per table: the sum of its columns' stored sizes, built once per process from the catalog (the schema is migrated before start). */
const columnSums = new Map<string, Promise<string>>();

/**
 * `coalesce(pg_column_size(t.a), 0) + …` over every column of `table`. Per column, not
 * `pg_column_size(t.*)`: the whole-row form builds the row as a composite, which fetches and
 * decompresses every TOASTed value (prompts, image data URLs, big tool outputs), so it reports
 * their full size, not what is stored, and reads all of it on every call. On a column,
 * pg_column_size of an out-of-line value is its stored (compressed) size, read from the TOAST
 * pointer without fetching it.
 */
function columnSum(db: StorageQueryable, table: string): Promise<string> {
  let sum = columnSums.get(table);
  if (!sum) {
    sum = (async () => {
      const [row] = (await db.query(
        `SELECT string_agg(format('coalesce(pg_column_size(t.%I), 0)', attname), ' + ' ORDER BY attnum) AS sum
           FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
        [table],
      )) as { sum: string | null }[];
      if (!row?.sum) throw new Error(`row storage: table ${table} has no columns`);
      return row.sum;
    })();
    // A failed catalog read (Postgres down) is not kept: the next call reads it again.
    sum.catch(() => columnSums.delete(table));
    columnSums.set(table, sum);
  }
  return sum;
}

/**
 * A scalar subquery answering `{rows, bytes}` (json) for the rows `from` selects: a `FROM … WHERE …`
 * whose counted table, `table`, is aliased `t`. Bytes are each row's columns as kept (compressed
 * ones compressed, TOASTed ones at their stored size, without reading them) plus a tuple header;
 * not its indexes, dead versions or page slack, which the table's own size reports. The WHERE must
 * go through an index on the owner's key: the route runs it on every read, never a scan of the
 * table; its cost grows with the owner's rows (one heap fetch each).
 */
export async function rowStorageSql(db: StorageQueryable, table: string, from: string): Promise<string> {
  const sum = await columnSum(db, table);
  return `(SELECT json_build_object('rows', count(*), 'bytes', coalesce(sum(${TUPLE_HEADER_BYTES} + ${sum}), 0)) ${from})`;
}

/** The value of a `rowStorageSql` column (json, parsed by the driver). */
export function rowStorageOf(value: unknown): RowStorage {
  const { rows, bytes } = (value ?? {}) as { rows?: number | string; bytes?: number | string };
  return { rows: Number(rows ?? 0), bytes: Number(bytes ?? 0) };
}

/**
 * Deletes at most `limit` rows of `table` that `where` selects (a condition on the table aliased
 * `t`, parameters numbered from $1), in one statement, and answers what they took as stored (the
 * per-column sum of rowStorageSql, computed on the deleted rows in RETURNING, without reading a
 * TOASTed value). The rows are picked and locked first (`FOR UPDATE SKIP LOCKED`: two purges never
 * wait on each other, nor on a writer) and deleted by ctid (a TID scan: no second index lookup).
 * `order` (e.g. `t.seq DESC`) picks which rows go first. Retention tasks purge with it: every
 * statement is short and bounded, however many rows the owner has.
 */
export async function deleteRowsBatch(
  db: StorageQueryable,
  table: string,
  where: string,
  parameters: unknown[],
  limit: number,
  order?: string,
): Promise<RowStorage> {
  const sum = await columnSum(db, table);
  const limitParam = `$${parameters.length + 1}`;
  const [row] = (await db.query(
    prepared(`WITH picked AS (SELECT t.ctid AS tid FROM ${table} t WHERE ${where}${order ? ` ORDER BY ${order}` : ''} LIMIT ${limitParam} FOR UPDATE OF t SKIP LOCKED),
       gone AS (DELETE FROM ${table} t WHERE t.ctid = ANY(ARRAY(SELECT tid FROM picked)) RETURNING ${TUPLE_HEADER_BYTES} + ${sum} AS bytes)
     SELECT count(*)::int AS rows, coalesce(sum(bytes), 0)::bigint AS bytes FROM gone`),
    [...parameters, limit],
  )) as { rows: number; bytes: string }[];
  return { rows: Number(row?.rows ?? 0), bytes: Number(row?.bytes ?? 0) };
}
