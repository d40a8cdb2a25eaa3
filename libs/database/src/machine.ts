/**
 * A state machine of one status column, declared once. From the declaration come the TypeScript
 * union (`StateOf<typeof M>`), the DTO and OpenAPI enum (`M.states`), the CHECK constraint its
 * table carries (`M.check`, written by a migration), the SQL guards of the statements that move a
 * row (`M.guard`, `M.from`), and the statuses the invariant checks read (scripts/lib/invariants.mjs
 * imports the compiled declarations). test/unit/machines.test.ts holds each declaration to its own
 * rules and test/unit/status-literals.test.ts holds every status literal written in SQL to the
 * machine of its table. Pure: no imports, so any lib (and the invariant script) may use it.
 */

/**
 * One edge (or a set of edges with one performer): `from` null is a row's creation. `by`
 * (`Class.method`), where given, names the repository method whose statement performs it, and
 * `column` the status column as that statement names it, where the guard is written.
 */
export interface Edge<S extends string> {
  from: readonly (S | null)[];
  to: readonly S[];
  by?: `${string}.${string}`;
  column?: string;
}

export interface MachineSpec<S extends string, E extends Record<string, Edge<S>>> {
  /** The table and its status column; null for a status that is derived, never stored. */
  table: string | null;
  column: string;
  states: readonly S[];
  /** The states a row is created in (each edge from null goes to one of them). */
  initial: readonly S[];
  /** The states no edge leaves. */
  terminal: readonly S[];
  /**
   * States the contract (and the CHECK) allows that no statement of this build writes: declared so
   * that nothing pretends they are reached. No edge may go to one.
   */
  unwritten?: readonly S[];
  edges: E;
  /** The name of the CHECK constraint (default `<table>_<column>_check`, Postgres' own name for a column CHECK). */
  constraint?: string;
}

export interface Machine<S extends string, E extends Record<string, Edge<S>>> {
  readonly table: string | null;
  readonly column: string;
  readonly states: readonly S[];
  readonly initial: readonly S[];
  readonly terminal: readonly S[];
  readonly unwritten: readonly S[];
  readonly edges: E;
  /** The CHECK constraint's name; null for a derived status. */
  readonly constraint: string | null;
  /** The CHECK expression, as Postgres takes it: `CHECK (status IN ('a', 'b'))`. */
  readonly check: string;
  /** Whether a value is one of the states (a validator where a status is read). */
  is(value: unknown): value is S;
  /** `'a', 'b'`: declared states as a SQL list (a state not declared throws: nothing undeclared reaches SQL). */
  list(...states: readonly S[]): string;
  /** `column = 'a'` or `column IN ('a', 'b')`: a guard on declared states. */
  guard(column: string, ...states: readonly S[]): string;
  /** The guard a statement puts on `column` for an edge's `from` states (a creation, `null`, needs none). */
  from(edge: keyof E & string, column?: string): string;
  /** Whether some edge moves a row from `from` (null: creation) to `to`. */
  allows(from: S | null, to: S): boolean;
}

export type StateOf<M> = M extends { readonly states: readonly (infer S)[] } ? S : never;

/** `'a', 'b'`: statuses as a SQL list. */
export function sqlList(statuses: readonly string[]): string {
  return statuses.map((status) => `'${status}'`).join(', ');
}

/** The guard a statement puts on `column` for an edge's `from` statuses (a creation, `null`, needs none). */
export function statusGuard(column: string, from: readonly (string | null)[]): string {
  const statuses = from.filter((status): status is string => status !== null);
  return statuses.length === 1 ? `${column} = '${statuses[0]}'` : `${column} IN (${sqlList(statuses)})`;
}

const SQL_WORD = /^[a-z][a-z0-9_]*$/;

/** Declares a machine; a declaration that breaks its own rules throws at import, so it cannot ship. */
export function defineMachine<const S extends string, const E extends Record<string, Edge<S>>>(spec: MachineSpec<S, E>): Machine<S, E> {
  const states = spec.states;
  const unwritten = spec.unwritten ?? [];
  const problems = machineProblems(spec.states, spec.initial, spec.terminal, unwritten, spec.edges);
  const name = `${spec.table ?? 'derived'}.${spec.column}`;
  if (problems.length > 0) throw new Error(`machine ${name}: ${problems.join('; ')}`);
  const declared = (list: readonly S[]): readonly S[] => {
    for (const state of list) if (!states.includes(state)) throw new Error(`machine ${name}: '${state}' is not a declared state`);
    return list;
  };
  const constraint = spec.table === null ? null : (spec.constraint ?? `${spec.table}_${spec.column}_check`);
  return {
    table: spec.table,
    column: spec.column,
    states,
    initial: spec.initial,
    terminal: spec.terminal,
    unwritten,
    edges: spec.edges,
    constraint,
    check: `CHECK (${spec.column} IN (${sqlList(states)}))`,
    is: (value: unknown): value is S => typeof value === 'string' && (states as readonly string[]).includes(value),
    list: (...list) => sqlList(declared(list)),
    guard: (column, ...list) => statusGuard(column, declared(list)),
    from: (edge, column) => {
      const declaredEdge = spec.edges[edge];
      const guardColumn = column ?? declaredEdge.column ?? spec.column;
      return statusGuard(guardColumn, declaredEdge.from);
    },
    allows: (from, to) => Object.values(spec.edges).some((edge) => edge.from.includes(from) && edge.to.includes(to)),
  };
}

/** What is wrong with a declaration (empty when nothing): the rules every machine keeps. */
export function machineProblems(
  states: readonly string[],
  initial: readonly string[],
  terminal: readonly string[],
  unwritten: readonly string[],
  edges: Record<string, Edge<string>>,
): string[] {
  const problems: string[] = [];
  if (new Set(states).size !== states.length) problems.push('a state is declared twice');
  for (const state of states) if (!SQL_WORD.test(state)) problems.push(`'${state}' is not a plain lowercase word`);
  const known = (where: string, list: readonly (string | null)[]): void => {
    for (const state of list) if (state !== null && !states.includes(state)) problems.push(`${where} names '${state}', not a declared state`);
  };
  known('initial', initial);
  known('terminal', terminal);
  known('unwritten', unwritten);
  const reached = new Set<string>();
  for (const [edgeName, edge] of Object.entries(edges)) {
    known(`edge ${edgeName}`, [...edge.from, ...edge.to]);
    if (edge.to.length === 0) problems.push(`edge ${edgeName} goes nowhere`);
    for (const to of edge.to) reached.add(to);
    if (edge.from.includes(null)) for (const to of edge.to) if (!initial.includes(to)) problems.push(`edge ${edgeName} creates a row in '${to}', not an initial state`);
    for (const from of edge.from) if (from !== null && terminal.includes(from)) problems.push(`edge ${edgeName} leaves '${from}', a terminal state`);
    for (const to of edge.to) if (unwritten.includes(to)) problems.push(`edge ${edgeName} writes '${to}', declared unwritten`);
  }
  for (const state of states) if (!reached.has(state) && !unwritten.includes(state)) problems.push(`no edge reaches '${state}' (declare it unwritten)`);
  for (const state of initial) if (unwritten.includes(state)) problems.push(`'${state}' is both initial and unwritten`);
  return problems;
}
