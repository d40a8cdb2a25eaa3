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
  return { name, text } as unknown as string;
}
