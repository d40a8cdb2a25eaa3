import type { UsageKind } from './usage.types.js';

/**
 * One call to write to the ledger, as the statement that records its step hands it over (a jsonb
 * array of these): the ledger copies the billing keys from the session and its owner, stamps
 * `usage_now()` and prices a model call with the price in force, all inside that one statement.
 */
export interface LedgerEntry {
  kind: UsageKind;
  /** Model calls: the model as the run names it (the key of its price). */
  model?: string | null;
  /** Tool calls and commands: the tool's name. */
  tool?: string | null;
  /** The run step that recorded the call, when it has one of its own (one ledger row per step and kind). */
  step_id?: string | null;
  input_tokens?: number;
  output_tokens?: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
  wall_ms?: number;
}

/** What a ledger insert returns for each row: enough for the token and cost counters after commit. */
export interface LedgerRow {
  kind: UsageKind;
  model: string | null;
  agent_id: string;
  input_tokens: string | number;
  output_tokens: string | number;
  cached_tokens: string | number;
  reasoning_tokens: string | number;
  cost_microusd: string | number | null;
}

export const MODEL_USAGE_KINDS: readonly UsageKind[] = ['model_call', 'compaction', 'sampling'];
export const TOOL_USAGE_KINDS: readonly UsageKind[] = ['tool_call', 'command'];
const inList = (kinds: readonly string[]): string => kinds.map((kind) => `'${kind}'`).join(', ');

/** A count from the entry: absent or negative is 0, and a part (cached, reasoning) never exceeds its whole. */
const count = (field: string): string => `greatest(coalesce(x.${field}, 0), 0)`;

/**
 * USD per million tokens is micro-dollars per token: cost = uncached input at the input price,
 * cached input at the cached price (else the input price), non-reasoning output at the output price,
 * reasoning at the reasoning price (else the output price), rounded to a whole micro-dollar. NULL
 * when the model has no price (or the row is not a model call).
 */
const COST = `CASE WHEN lp.model IS NULL OR le.kind NOT IN (${inList(MODEL_USAGE_KINDS)}) THEN NULL ELSE round(
    (le.i - le.c) * lp.input_per_mtok_usd + le.c * coalesce(lp.cached_input_per_mtok_usd, lp.input_per_mtok_usd)
  + (le.o - le.r) * lp.output_per_mtok_usd + le.r * coalesce(lp.reasoning_per_mtok_usd, lp.output_per_mtok_usd))::bigint END`;

/** The price a model call was made at, kept on its row: a later price never rewrites history. */
const PRICE = `CASE WHEN lp.model IS NULL OR le.kind NOT IN (${inList(MODEL_USAGE_KINDS)}) THEN NULL ELSE jsonb_build_object('model', lp.model,
  'input_per_mtok_usd', lp.input_per_mtok_usd, 'output_per_mtok_usd', lp.output_per_mtok_usd,
  'cached_input_per_mtok_usd', lp.cached_input_per_mtok_usd, 'reasoning_per_mtok_usd', lp.reasoning_per_mtok_usd) END`;

export const LEDGER_RETURNING = 'kind, model, agent_id, input_tokens, output_tokens, cached_tokens, reasoning_tokens, cost_microusd';

/**
 * An INSERT of the ledger rows of `entries` (a jsonb array of LedgerEntry), for use as a CTE of the
 * statement that records the step: attribution from the session row and its owner (an end user
 * bills to its parent account, under its app and external id), `at` from `usage_now()`, the cost
 * from the model's price joined here (no cache to go stale, no statement of its own). `where` may
 * hold the row back (a fenced statement: only when its lease still holds). Returns LEDGER_RETURNING.
 */
export function ledgerInsertSql(p: { entries: string; session: string; turn: string; run: string; where?: string }): string {
  return `INSERT INTO usage_ledger (id, at, kind, session_id, root_session_id, turn_id, run_id, step_id, agent_id, project_id, owner_id, account_id,
      app_id, end_user_id, model, tool, input_tokens, output_tokens, cached_tokens, reasoning_tokens, model_calls, tool_calls, wall_ms, cost_microusd, price)
    SELECT gen_random_uuid(), usage_now(), le.kind, ls.id, ls.root_session_id, ${p.turn}::uuid, ${p.run}::uuid, le.step_id, ls.agent_id, ls.project_id, ls.owner_id,
      CASE WHEN lu.kind = 'end_user' THEN lu.parent_id ELSE lu.id END, CASE WHEN lu.kind = 'end_user' THEN lu.app_id END, CASE WHEN lu.kind = 'end_user' THEN lu.external_id END,
      le.model, le.tool, le.i, le.o, le.c, le.r,
      CASE WHEN le.kind IN (${inList(MODEL_USAGE_KINDS)}) THEN 1 ELSE 0 END, CASE WHEN le.kind IN (${inList(TOOL_USAGE_KINDS)}) THEN 1 ELSE 0 END, le.w,
      ${COST}, ${PRICE}
    FROM (SELECT x.kind, x.model, x.tool, x.step_id, ${count('input_tokens')} AS i, ${count('output_tokens')} AS o,
            least(${count('cached_tokens')}, ${count('input_tokens')}) AS c, least(${count('reasoning_tokens')}, ${count('output_tokens')}) AS r, ${count('wall_ms')} AS w
          FROM jsonb_to_recordset(${p.entries}::jsonb) AS x(kind text, model text, tool text, step_id uuid, input_tokens bigint, output_tokens bigint,
            cached_tokens bigint, reasoning_tokens bigint, wall_ms bigint)) le
    JOIN sessions ls ON ls.id = ${p.session}::uuid
    JOIN users lu ON lu.id = ls.owner_id
    LEFT JOIN model_prices lp ON lp.model = le.model
    ${p.where ? `WHERE ${p.where}` : ''}
    RETURNING ${LEDGER_RETURNING}`;
}

const SUMMED = ['input_tokens', 'output_tokens', 'cached_tokens', 'reasoning_tokens', 'total_tokens', 'model_calls', 'tool_calls'] as const;

/**
 * The sums of the rows a ledger CTE inserted (`alias`), as a usage object (jsonb); NULL when it
 * inserted none. One row: `SELECT ... AS delta`.
 */
export function ledgerDeltaSql(alias: string): string {
  return `SELECT CASE WHEN count(*) = 0 THEN NULL ELSE jsonb_build_object(
      'input_tokens', sum(input_tokens), 'output_tokens', sum(output_tokens), 'cached_tokens', sum(cached_tokens),
      'reasoning_tokens', sum(reasoning_tokens), 'total_tokens', sum(input_tokens + output_tokens),
      'model_calls', sum(CASE WHEN kind IN (${inList(MODEL_USAGE_KINDS)}) THEN 1 ELSE 0 END),
      'tool_calls', sum(CASE WHEN kind IN (${inList(TOOL_USAGE_KINDS)}) THEN 1 ELSE 0 END),
      'cost_microusd', sum(cost_microusd)) END AS delta FROM ${alias}`;
}

/**
 * A usage column (jsonb) plus a delta (jsonb, NULL: unchanged), field by field. The cost stays
 * null while neither side has one (no priced call), else unpriced calls add nothing to it.
 */
export function addUsageSql(column: string, delta: string): string {
  const field = (side: string, key: string): string => `(${side}->>'${key}')::bigint`;
  const sums = SUMMED.map((key) => `'${key}', coalesce(${field(column, key)}, 0) + coalesce(${field(delta, key)}, 0)`).join(', ');
  const cost = `CASE WHEN ${field(column, 'cost_microusd')} IS NULL AND ${field(delta, 'cost_microusd')} IS NULL THEN NULL
    ELSE coalesce(${field(column, 'cost_microusd')}, 0) + coalesce(${field(delta, 'cost_microusd')}, 0) END`;
  return `CASE WHEN ${delta} IS NULL THEN ${column} ELSE jsonb_build_object(${sums}, 'cost_microusd', ${cost}) END`;
}
