import { type Budget, BUDGET_LIMIT_KEYS, type BudgetLimitKey, type BudgetPeriod, type BudgetSpent } from './budget.types.js';

/**
 * What a call about to start may spend, as its reservation holds it: a model call is one model
 * call with a token and cost estimate, a tool call one tool call. `turns` is 1 when the call would
 * be the first the budget counts of its turn (its turn has no ledger row in the budget's period
 * yet), 0 when the turn is already counted: a turn is never stopped by its own count.
 */
export interface CallEstimate {
  model_calls: number;
  tool_calls: number;
  tokens: number;
  cost_microusd: number;
  turns: number;
  /** A model call's model: its cost is then `tokens` at the model's input price now, priced by the reservation's own statement (0 unpriced). */
  priceModel?: string;
}

/** A budget's current period as one read sees it: committed sums, what calls in flight reserved, and whether a given turn is counted yet. */
export interface BudgetUsage {
  budgetId: string;
  spent: BudgetSpent;
  reserved: BudgetSpent;
  /** Whether the turn the read was asked about has a ledger row in this budget's period (false when none was asked about). */
  turnCounted: boolean;
  /** The usage clock (`usage_now()`) at the read: what the period is the current one of. */
  clock: Date;
}

/** The first limit a budget has reached: its key, its value, and what is spent of it (committed plus reserved). */
export interface LimitReached {
  limit: BudgetLimitKey;
  limit_value: number;
  spent: number;
}

export type Room = { ok: true } | ({ ok: false } & LimitReached);

export const NO_SPENDING: BudgetSpent = Object.freeze({ cost_microusd: 0, tokens: 0, model_calls: 0, tool_calls: 0, turns: 0, wall_time_s: 0 });

/**
 * Whether a call may start under `budget`: it may while, for every limit, what is committed plus
 * what other calls in flight reserved is below the limit. A call's size (tokens, cost, time) is
 * not known before it runs, so a budget can be overshot by the one call that starts below its
 * limit, never by two calls running at once (the first one's reservation counts for the second).
 * `turns` counts the call's own turn only when it is not counted yet (`estimate.turns`), so a turn
 * that has started may go on; a new turn needs a turn of room. Limits are checked in the order of
 * BUDGET_LIMIT_KEYS; the first one reached is the answer.
 */
export function roomFor(budget: Pick<Budget, 'limits'>, spent: BudgetSpent, reserved: BudgetSpent, estimate: Pick<CallEstimate, 'turns'>): Room {
  for (const key of BUDGET_LIMIT_KEYS) {
    const limit = budget.limits[key];
    if (limit === undefined) continue;
    if (key === 'turns' && estimate.turns === 0) continue;
    const used = spent[key] + reserved[key];
    if (used >= limit) return { ok: false, limit: key, limit_value: limit, spent: used };
  }
  return { ok: true };
}

/**
 * The first budget (in the order given: the repository's, by id) with no room for the call, with
 * the limit it reached; null when every budget has room. A budget missing from `usage` has spent
 * nothing. `estimate.turns` is taken per budget from whether it counted the call's turn already.
 */
export function firstBudgetWithoutRoom(budgets: readonly Budget[], usage: ReadonlyMap<string, BudgetUsage>, opensTurn = true): ({ budget: Budget } & LimitReached) | null {
  for (const budget of budgets) {
    const read = usage.get(budget.id);
    const room = roomFor(budget, read?.spent ?? NO_SPENDING, read?.reserved ?? NO_SPENDING, { turns: opensTurn && !read?.turnCounted ? 1 : 0 });
    if (!room.ok) return { budget, limit: room.limit, limit_value: room.limit_value, spent: room.spent };
  }
  return null;
}

/**
 * The current period of a budget at `now` on the usage clock, in UTC: a day or a calendar month
 * from its first instant (inclusive) to the next one's (exclusive); a lifetime has no bounds. The
 * same bounds as the SQL that sums the ledger (PERIOD_START), for what the resource shows.
 */
export function periodBounds(period: BudgetPeriod, now: Date): { start: Date | null; end: Date | null } {
  if (period === 'lifetime') return { start: null, end: null };
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth();
  if (period === 'month') return { start: new Date(Date.UTC(year, month, 1)), end: new Date(Date.UTC(year, month + 1, 1)) };
  const day = now.getUTCDate();
  return { start: new Date(Date.UTC(year, month, day)), end: new Date(Date.UTC(year, month, day + 1)) };
}
