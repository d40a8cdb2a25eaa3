import { v7 as uuidv7 } from 'uuid';

/** Time-ordered UUIDv7: ids sort by creation, which keeps btree inserts local and cursors cheap. */
export function newId(): string {
  return uuidv7();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** Public times are Unix seconds. */
export function unixSeconds(date: Date): number;
export function unixSeconds(date: Date | null): number | null;
export function unixSeconds(date: Date | null): number | null {
  return date ? Math.floor(date.getTime() / 1000) : null;
}
