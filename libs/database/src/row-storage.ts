/** Rows of one table that belong to something (a session), and the bytes they take as stored. */
export interface RowStorage {
  rows: number;
  bytes: number;
}

/**
 * A scalar subquery answering `{rows, bytes}` (json) for the rows `from` selects: a `FROM … WHERE …`
 * whose counted table is aliased `t`. Bytes are `pg_column_size(t.*)`, each row as a tuple with its
 * values as kept (compressed ones compressed, TOASTed ones at their stored size, a tuple header);
 * not its indexes, dead versions or page slack, which the table's own size reports. The WHERE must
 * go through an index on the owner's key: the route runs it on every read, never a scan of the table.
 */
export function rowStorageSql(from: string): string {
  return `(SELECT json_build_object('rows', count(*), 'bytes', coalesce(sum(pg_column_size(t.*)), 0)) ${from})`;
}

/** The value of a `rowStorageSql` column (json, parsed by the driver). */
export function rowStorageOf(value: unknown): RowStorage {
  const { rows, bytes } = (value ?? {}) as { rows?: number | string; bytes?: number | string };
  return { rows: Number(rows ?? 0), bytes: Number(bytes ?? 0) };
}
