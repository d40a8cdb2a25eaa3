import type { EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import type { Budget, BudgetLimitKey, BudgetLimits, BudgetOnExceeded, BudgetPeriod, BudgetScopeKind, BudgetSpent } from './budget.types.js';

/*
 * The SQL the worker enforces budgets with: which budgets cover a session, what each has spent in
 * its period plus what calls in flight hold, and a call's reservation. Sessions without a budget in
 * scope only ever evaluate BUDGETED (one index probe inside the claim's existing read).
 */

/** The account (product user) of a users row: an app end user's is its parent. */
const ACCOUNT = (u: string): string => `CASE WHEN ${u}.kind = 'end_user' THEN ${u}.parent_id ELSE ${u}.id END`;

/**
 * Budget row `b` covers session row `s` owned by users row `u` (the same account, and the scope
 * matches: a session budget covers the session and, on a tree's root, the whole tree).
 */
export const BUDGET_COVERS = (b: string, s: string, u: string): string => `${b}.account_id = ${ACCOUNT(u)} AND (
  (${b}.scope_kind = 'session' AND ${b}.scope_id IN (${s}.id::text, ${s}.root_session_id::text))
  OR (${b}.scope_kind = 'project' AND ${b}.scope_id = ${s}.project_id)
  OR (${b}.scope_kind = 'agent' AND ${b}.scope_id = ${s}.agent_id)
  OR (${b}.scope_kind = 'app' AND ${u}.kind = 'end_user' AND ${b}.scope_id = ${u}.app_id)
  OR (${b}.scope_kind = 'end_user' AND ${u}.kind = 'end_user' AND ${b}.scope_id = ${u}.external_id AND (${b}.app_id IS NULL OR ${b}.app_id = ${u}.app_id))
  OR ${b}.scope_kind = 'user')`;

/** Whether any budget covers the session row `s` (a boolean SQL expression: a column of a statement that already reads it). */
export const BUDGETED = (s: string): string =>
  `EXISTS (SELECT 1 FROM users bu JOIN budgets bb ON bb.account_id = ${ACCOUNT('bu')} WHERE bu.id = ${s}.owner_id AND ${BUDGET_COVERS('bb', s, 'bu')})`;

/** Ledger row `l` counts toward budget `b` (scope and period). */
const LEDGER_COUNTS = (l: string, b: string): string => `${l}.account_id = ${b}.account_id AND (
  (${b}.scope_kind = 'session' AND (${l}.session_id::text = ${b}.scope_id OR ${l}.root_session_id::text = ${b}.scope_id))
  OR (${b}.scope_kind = 'project' AND ${l}.project_id = ${b}.scope_id)
  OR (${b}.scope_kind = 'agent' AND ${l}.agent_id = ${b}.scope_id)
  OR (${b}.scope_kind = 'app' AND ${l}.app_id = ${b}.scope_id)
  OR (${b}.scope_kind = 'end_user' AND ${l}.end_user_id = ${b}.scope_id AND (${b}.app_id IS NULL OR ${l}.app_id = ${b}.app_id))
  OR ${b}.scope_kind = 'user')
  AND ${l}.at >= CASE ${b}.period WHEN 'day' THEN date_trunc('day', usage_now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
    WHEN 'month' THEN date_trunc('month', usage_now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' ELSE '-infinity'::timestamptz END`;

/** A budget in a session's scope, as the gate reads it (locked). */
export type ScopedBudget = Pick<Budget, 'id' | 'scopeKind' | 'scopeId' | 'limits' | 'period' | 'onExceeded'>;

/**
 * The budgets covering the session, in id order; `lock` (a gate's first statement) locks them, so
 * concurrent gates of one budget take turns. A budget waitpoint's approval only reads them.
 */
export async function budgetsInScope(manager: EntityManager, sessionId: string, lock: boolean): Promise<ScopedBudget[]> {
  const rows = (await manager.query(
    prepared(`SELECT b.id, b.scope_kind, b.scope_id, b.limits, b.period, b.on_exceeded
     FROM sessions s JOIN users u ON u.id = s.owner_id JOIN budgets b ON ${BUDGET_COVERS('b', 's', 'u')}
     WHERE s.id = $1 ORDER BY b.id${lock ? ' FOR UPDATE OF b' : ''}`),
    [sessionId],
  )) as Record<string, unknown>[];
  return rows.map((row) => ({
    id: row.id as string,
    scopeKind: row.scope_kind as BudgetScopeKind,
    scopeId: row.scope_id as string,
    limits: row.limits as BudgetLimits,
    period: row.period as BudgetPeriod,
    onExceeded: row.on_exceeded as BudgetOnExceeded,
  }));
}

/**
 * What each budget has spent in its current period plus what calls in flight of other runs hold
 * (reservations of runs whose lease is alive: a dead worker's frees itself with its lease). Read
 * after the lock, in a statement of its own: its snapshot sees what the gates before it committed.
 * `turns` leaves out the turn asking (a turn already counted may go on).
 */
export async function spentInPeriods(manager: EntityManager, budgetIds: string[], runId: string, turnId: string): Promise<Map<string, BudgetSpent>> {
  if (budgetIds.length === 0) return new Map();
  const rows = (await manager.query(
    prepared(`SELECT b.id,
       coalesce(l.cost, 0) + coalesce(r.cost, 0) AS cost_microusd, coalesce(l.tokens, 0) + coalesce(r.tokens, 0) AS tokens,
       coalesce(l.model_calls, 0) + coalesce(r.model_calls, 0) AS model_calls, coalesce(l.tool_calls, 0) + coalesce(r.tool_calls, 0) AS tool_calls,
       coalesce(l.turns, 0) AS turns, coalesce(l.wall_ms, 0) / 1000 AS wall_time_s
     FROM budgets b
     LEFT JOIN LATERAL (SELECT sum(cost_microusd) AS cost, sum(input_tokens + output_tokens) AS tokens, sum(model_calls) AS model_calls,
         sum(tool_calls) AS tool_calls, count(DISTINCT turn_id) FILTER (WHERE turn_id <> $3::uuid) AS turns, sum(wall_ms) AS wall_ms
       FROM usage_ledger l WHERE ${LEDGER_COUNTS('l', 'b')}) l ON true
     LEFT JOIN LATERAL (SELECT sum(res.cost_microusd) AS cost, sum(res.tokens) AS tokens, sum(res.model_calls) AS model_calls, sum(res.tool_calls) AS tool_calls
       FROM budget_reservations res JOIN runs ON runs.id = res.run_id AND runs.lease_expires_at > now()
       WHERE b.id = ANY(res.budget_ids) AND res.expires_at > now() AND res.run_id <> $2::uuid) r ON true
     WHERE b.id = ANY($1::uuid[])`),
    [budgetIds, runId, turnId],
  )) as Record<string, unknown>[];
  return new Map(rows.map((row) => [row.id as string, spentOf(row)]));
}

function spentOf(row: Record<string, unknown>): BudgetSpent {
  const n = (key: BudgetLimitKey): number => Number(row[key] ?? 0);
  return { cost_microusd: n('cost_microusd'), tokens: n('tokens'), model_calls: n('model_calls'), tool_calls: n('tool_calls'), turns: n('turns'), wall_time_s: Math.floor(n('wall_time_s')) };
}

/** What a call in flight holds of the budgets until its ledger row is written (or its run ends). */
export interface CallEstimate {
  callKey: string;
  modelCalls: number;
  toolCalls: number;
  tokens: number;
  /** The model whose current price estimates the cost (input price per token of `tokens`); null for a tool call. */
  model: string | null;
}

/** Holds the call's estimate against the budgets (replacing the run's earlier holds: its calls run one at a time). */
export async function reserveCall(manager: EntityManager, runId: string, budgetIds: string[], call: CallEstimate, ttlMs: number): Promise<void> {
  await manager.query(
    prepared(`WITH gone AS (DELETE FROM budget_reservations WHERE run_id = $1 AND call_key <> $2)
     INSERT INTO budget_reservations (run_id, call_key, budget_ids, tokens, cost_microusd, model_calls, tool_calls, expires_at)
     SELECT $1, $2, $3::uuid[], $4, coalesce(round($4 * p.input_per_mtok_usd)::bigint, 0), $5, $6, now() + make_interval(secs => $8::double precision / 1000)
     FROM (SELECT 1) one LEFT JOIN model_prices p ON p.model = $7
     ON CONFLICT (run_id, call_key) DO UPDATE SET budget_ids = EXCLUDED.budget_ids, tokens = EXCLUDED.tokens, cost_microusd = EXCLUDED.cost_microusd,
       model_calls = EXCLUDED.model_calls, tool_calls = EXCLUDED.tool_calls, expires_at = EXCLUDED.expires_at`),
    [runId, call.callKey, budgetIds, Math.max(0, Math.round(call.tokens)), call.modelCalls, call.toolCalls, call.model, ttlMs],
  );
}

/** The run's calls are recorded (or it ended): what they held is released. */
export async function releaseRun(manager: EntityManager, runId: string): Promise<void> {
  await manager.query(prepared(`DELETE FROM budget_reservations WHERE run_id = $1`), [runId]);
}
