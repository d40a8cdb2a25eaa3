import { createHash } from 'node:crypto';

const names = new Map<string, string>();

/**
 * Marks a hot statement for a named prepared statement: Postgres parses and plans it once per
 * connection instead of on every call (parse and plan are a large share of the database's CPU on
 * the submit and turn paths). The name is derived from the text, so one text always has one name.
 * The result goes where a query string goes (`manager.query(prepared(sql), …)`): the driver
 * accepts a query config there, and TypeORM's result shapes stay as they are. A fresh config each
 * call: the driver writes the values into it.
 */
export function prepared(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    // A cached plan of `*` breaks when a migration adds a column under running processes.
    if (/\b(SELECT|RETURNING)\s+(\w+\.)?\*/i.test(text)) throw new Error(`prepared statements name their columns, not *: ${text.slice(0, 80)}`);
    name = `yx_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    names.set(text, name);
  }
  // toString: TypeORM logs a failed query as a string; keep the SQL in that log line.
  return { name, text, toString: () => text } as unknown as string;
}

/** Statements whose text grows with a row count are prepared up to this many rows, so each connection holds a bounded number of them. */
export const PREPARED_MAX_ROWS = 16;

/** A statement built for `rows` rows (a VALUES list): prepared for small, common sizes, plain beyond. */
export function preparedUpTo(rows: number, text: string): string {
  return rows <= PREPARED_MAX_ROWS ? prepared(text) : text;
}
