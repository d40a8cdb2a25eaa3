/**
 * SQL guards built from the state machines' declared statuses (libs/turns/src/states.ts,
 * libs/inputs/src/states.ts): statements write their guards through these, so a status is
 * spelled once, in its states module. The values are those modules' constants, never input.
 */

/**
 * One edge (or a set of edges with one performer) of a state machine: `from` null is a row's
 * creation. `by` is `Class.method` of the repository whose statement performs it; `column` is the
 * status column as that statement names it, where its guard (statusGuard) is written.
 */
export interface Transition<S extends string> {
  from: readonly (S | null)[];
  to: readonly S[];
  by: `${string}.${string}`;
  column: string;
}

/** `'a', 'b'`: statuses as a SQL list. */
export function sqlList(statuses: readonly string[]): string {
  return statuses.map((status) => `'${status}'`).join(', ');
}

/** The guard a statement puts on `column` for an edge's `from` statuses (a creation, `null`, needs none). */
export function statusGuard(column: string, from: readonly (string | null)[]): string {
  const statuses = from.filter((status): status is string => status !== null);
  return statuses.length === 1 ? `${column} = '${statuses[0]}'` : `${column} IN (${sqlList(statuses)})`;
}
