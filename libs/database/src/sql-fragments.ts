/**
 * A data-modifying statement (an INSERT or UPDATE, with RETURNING where its caller needs rows back)
 * written with its own parameters numbered from $1: a body that a transaction composes, with
 * others, into the CTEs of one statement (one round trip instead of one per owning library).
 * `name` is the CTE's name when another fragment reads its RETURNING rows.
 */
export interface SqlFragment {
  sql: string;
  params: unknown[];
  name?: string;
  /** Rows its text grows with (a VALUES list), for `preparedUpTo`. */
  rows?: number;
}

/** `sql` with every parameter reference $n renumbered to $(n + offset): fragments share one statement's parameter list. */
export function shiftParams(sql: string, offset: number): string {
  return offset === 0 ? sql : sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`);
}

/**
 * One statement of `fragments` as CTEs (named `name`, else f0, f1, …) followed by `tail` (more CTE
 * definitions, already numbered from $1 with `tailParams`, and the final SELECT). Postgres runs
 * every data-modifying CTE exactly once, whether or not the SELECT reads it; all of them see the
 * same snapshot, and none sees another's rows except through RETURNING.
 */
export function composeFragments(
  fragments: readonly SqlFragment[],
  tail: { ctes: string[]; select: (names: string[]) => string; params: unknown[] },
): { sql: string; params: unknown[]; names: string[] } {
  const params: unknown[] = [];
  const names: string[] = [];
  const ctes = fragments.map((fragment, index) => {
    const name = fragment.name ?? `f${index}`;
    names.push(name);
    const body = shiftParams(fragment.sql, params.length);
    params.push(...fragment.params);
    return `${name} AS (${body})`;
  });
  const offset = params.length;
  params.push(...tail.params);
  const all = [...ctes, ...tail.ctes.map((cte) => shiftParams(cte, offset))];
  const select = shiftParams(tail.select(names), offset);
  return { sql: all.length > 0 ? `WITH ${all.join(',\n')}\n${select}` : select, params, names };
}
