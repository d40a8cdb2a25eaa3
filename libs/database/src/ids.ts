import { v5 as uuidv5, v7 as uuidv7 } from 'uuid';

/** Time-ordered UUIDv7: ids sort by creation, which keeps btree inserts local and cursors cheap. */
export function newId(): string {
  return uuidv7();
}

/** The namespace of ids derived from what made them (a member session from its spawning call). */
const DERIVED_NAMESPACE = '0b5c4f0e-5a43-4f6e-9d0c-7a1f2c3e4d5b';

/**
 * A UUIDv5 of `name`: the same name always gives the same id, so a step that is retried or taken
 * over creates the row it already created (ON CONFLICT DO NOTHING), never a second one.
 */
export function derivedId(name: string): string {
  return uuidv5(name, DERIVED_NAMESPACE);
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
