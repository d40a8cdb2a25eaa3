// The SQL of which budgets cover what: a session (for the checks before its calls) and ledger rows
// (for what a budget has spent), kept side by side so the two cannot drift apart.

/** The columns budgetFromRow reads, named (a prepared statement's `*` breaks when a later migration adds one). */
export const BUDGET_COLUMNS = 'id, account_id, created_by, scope_kind, scope_id, app_id, limits, period, on_exceeded, metadata, created_at, updated_at';

/** BUDGET_COLUMNS of the alias `b`. */
export const BUDGET_COLUMNS_OF = (alias: string): string =>
  BUDGET_COLUMNS.split(', ')
    .map((column) => `${alias}.${column}`)
    .join(', ');

/** A session owner's account (its product user): an app end user's is its parent, the product user behind the app. */
const ACCOUNT_OF_USER = (user: string): string => `CASE WHEN ${user}.kind = 'end_user' THEN ${user}.parent_id ELSE ${user}.id END`;

/**
 * Whether budget `b` covers the session `s` whose owner's users row is `u` (the account is checked
 * apart, by the join that finds the budgets): a session budget covers the session and, named on a
 * tree's root, every member of the tree; project, agent, app and end user budgets cover the
 * sessions with that key; a user budget every session of its account. A budget made for an app
 * (`app_id`: through an app-bound key) covers that app's end users' sessions only, whatever its
 * scope: an app never binds another app's users or the product user's own sessions.
 */
const COVERS_SESSION = (b: string, s: string, u: string): string => `((
  (${b}.scope_kind = 'session' AND ${b}.scope_id IN (${s}.id::text, ${s}.root_session_id::text))
  OR (${b}.scope_kind = 'project' AND ${b}.scope_id = ${s}.project_id)
  OR (${b}.scope_kind = 'agent' AND ${b}.scope_id = ${s}.agent_id)
  OR (${b}.scope_kind = 'app' AND ${u}.kind = 'end_user' AND ${b}.scope_id = ${u}.app_id)
  OR (${b}.scope_kind = 'end_user' AND ${u}.kind = 'end_user' AND ${b}.scope_id = ${u}.external_id)
  OR ${b}.scope_kind = 'user')
  AND (${b}.app_id IS NULL OR ${b}.app_id = ${u}.app_id))`;

/**
 * `EXISTS (...)`: whether any budget covers the session row of the alias `sessions` (a column
 * another statement reads — the claim's read under the session lock — so that a turn with no
 * budget in scope pays nothing more for budgets: one index probe on the owner's account, no
 * statement). Needs no parameter.
 */
export function budgetedSql(sessions = 'sessions'): string {
  return `EXISTS (SELECT 1 FROM users bu JOIN budgets bb ON bb.account_id = ${ACCOUNT_OF_USER('bu')}
    WHERE bu.id = ${sessions}.owner_id AND ${COVERS_SESSION('bb', sessions, 'bu')})`;
}

/**
 * The budgets covering session $1, by id (the order concurrent checks lock them in), locked FOR
 * UPDATE with `lock`: two checks of budgets they share then run one after the other, each seeing
 * the other's reservation.
 */
export function budgetsInScopeSql(lock: boolean): string {
  return `SELECT ${BUDGET_COLUMNS_OF('b')}
    FROM sessions s JOIN users u ON u.id = s.owner_id JOIN budgets b ON b.account_id = ${ACCOUNT_OF_USER('u')}
    WHERE s.id = $1 AND ${COVERS_SESSION('b', 's', 'u')}
    ORDER BY b.id${lock ? ' FOR UPDATE OF b' : ''}`;
}

/**
 * Whether ledger row `l` counts for budget `b` (same account; for a budget made for an app, that
 * app's rows only, as COVERS_SESSION; the scope's key; the budget's current period on the usage clock, UTC).
 */
export const LEDGER_ROW_COUNTS = (b: string, l: string): string => `${l}.account_id = ${b}.account_id
  AND (${b}.app_id IS NULL OR ${l}.app_id = ${b}.app_id)
  AND CASE ${b}.scope_kind
    WHEN 'session' THEN ${l}.session_id::text = ${b}.scope_id OR ${l}.root_session_id::text = ${b}.scope_id
    WHEN 'project' THEN ${l}.project_id = ${b}.scope_id
    WHEN 'agent' THEN ${l}.agent_id = ${b}.scope_id
    WHEN 'app' THEN ${l}.app_id = ${b}.scope_id
    WHEN 'end_user' THEN ${l}.end_user_id = ${b}.scope_id
    ELSE true END
  AND ${l}.at >= ${PERIOD_START(`${b}.period`)}`;

/** A session budget's scope id as a uuid (NULL for any other text: no ledger row's session then matches, as with text). */
const SESSION_SCOPE_UUID = (b: string): string =>
  `(CASE WHEN ${b}.scope_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN ${b}.scope_id::uuid END)`;

/**
 * The ledger rows (alias `x`) that count for budget `b`, as one UNION ALL with a branch per scope
 * kind, each led by the key an index of usage_ledger holds with `at`: a session budget reads its
 * session's and its tree's rows (session_id, root_session_id), a project or agent budget its key's,
 * the others (app, end user, user) their account's. Only the branch of `b`'s kind runs (its kind
 * test is a one-time filter), so a check never sums the whole account for a narrower budget.
 * Which rows count is LEDGER_ROW_COUNTS alone: each branch's key is what it already implies.
 */
const LEDGER_ROWS_OF = (b: string): string => {
  const columns = 'x.cost_microusd, x.input_tokens, x.output_tokens, x.model_calls, x.tool_calls, x.turn_id, x.wall_ms';
  const branch = (kind: string, key?: string): string => `SELECT ${columns} FROM usage_ledger x WHERE ${kind}${key ? ` AND ${key}` : ''} AND ${LEDGER_ROW_COUNTS(b, 'x')}`;
  return [
    branch(`${b}.scope_kind = 'session'`, `(x.session_id = ${SESSION_SCOPE_UUID(b)} OR x.root_session_id = ${SESSION_SCOPE_UUID(b)})`),
    branch(`${b}.scope_kind = 'project'`, `x.project_id = ${b}.scope_id`),
    branch(`${b}.scope_kind = 'agent'`, `x.agent_id = ${b}.scope_id`),
    // LEDGER_ROW_COUNTS leads with the account.
    branch(`${b}.scope_kind NOT IN ('session', 'project', 'agent')`),
  ].join('\n    UNION ALL ');
};

/**
 * The start of the current period on the usage clock (`usage_now()`), in UTC whatever the
 * connection's time zone: the day's or the month's midnight, or -infinity for a lifetime budget.
 */
export const PERIOD_START = (period: string): string => `CASE ${period}
    WHEN 'day' THEN date_trunc('day', usage_now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    WHEN 'month' THEN date_trunc('month', usage_now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    ELSE '-infinity'::timestamptz END`;

/**
 * Whether reservation `y` still holds its estimate: only while its run holds a live lease (on the
 * database's own clock, as leases are; renewed by the run's heartbeat, so a call of any length keeps
 * it). A run that ended, waits, yielded or was interrupted (its worker died) holds none, so what its
 * calls reserved counts no more, whoever deletes the rows and when. `rr` is the run (its turn keys
 * the reservation's `turns`: a successor run of the same turn is the same turn).
 */
const LIVE_RESERVATION = (y: string): string => `JOIN runs rr ON rr.id = ${y}.run_id AND rr.lease_owner IS NOT NULL AND rr.lease_expires_at > now()`;

/**
 * What budgets $1 (uuid[]) spent in their current periods, one row each: the committed sums of the
 * ledger, the live reservations (LIVE_RESERVATION) of calls in flight, the turns they open other
 * than turn $2 (nullable), and whether turn $2 is counted already — by a ledger row, or by a live
 * reservation of its run that opened it.
 */
export const SPENT_SQL = `SELECT b.id, b.period,
    coalesce(l.cost_microusd, 0)::bigint AS cost_microusd, coalesce(l.tokens, 0)::bigint AS tokens,
    coalesce(l.model_calls, 0)::bigint AS model_calls, coalesce(l.tool_calls, 0)::bigint AS tool_calls,
    coalesce(l.turns, 0)::bigint AS turns, coalesce(l.wall_ms, 0)::bigint / 1000 AS wall_time_s,
    coalesce(r.cost_microusd, 0)::bigint AS r_cost_microusd, coalesce(r.tokens, 0)::bigint AS r_tokens,
    coalesce(r.model_calls, 0)::bigint AS r_model_calls, coalesce(r.tool_calls, 0)::bigint AS r_tool_calls,
    coalesce(r.turns, 0)::bigint AS r_turns,
    coalesce(l.turn_counted, false) OR coalesce(r.own_turn, false) AS turn_counted, usage_now() AS clock
  FROM budgets b
  LEFT JOIN LATERAL (SELECT sum(x.cost_microusd) AS cost_microusd, sum(x.input_tokens + x.output_tokens) AS tokens,
      sum(x.model_calls) AS model_calls, sum(x.tool_calls) AS tool_calls, count(DISTINCT x.turn_id) AS turns,
      sum(x.wall_ms) AS wall_ms, bool_or(x.turn_id = $2::uuid) AS turn_counted
    FROM (${LEDGER_ROWS_OF('b')}) x) l ON true
  LEFT JOIN LATERAL (SELECT sum(y.cost_microusd) AS cost_microusd, sum(y.tokens) AS tokens, sum(y.model_calls) AS model_calls,
      sum(y.tool_calls) AS tool_calls, count(DISTINCT rr.turn_id) FILTER (WHERE y.turns > 0 AND rr.turn_id IS DISTINCT FROM $2::uuid) AS turns,
      bool_or(y.turns > 0 AND rr.turn_id = $2::uuid) AS own_turn
    FROM budget_reservations y ${LIVE_RESERVATION('y')} WHERE y.budget_ids @> ARRAY[b.id]) r ON true
  WHERE b.id = ANY($1::uuid[])`;
