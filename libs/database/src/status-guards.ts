import type { Edge } from './machine.js';

export { sqlList, statusGuard } from './machine.js';

/**
 * An edge whose performer is named: `by` is `Class.method` of the repository whose statement
 * performs it; `column` is the status column as that statement names it, where its guard
 * (statusGuard) is written. test/unit/states.test.ts runs each performer and checks its guard.
 */
export interface Transition<S extends string> extends Edge<S> {
  by: `${string}.${string}`;
  column: string;
}
