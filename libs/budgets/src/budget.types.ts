/**
 * A budget bounds what a scope spends over a period (sums of the usage ledger plus what calls in
 * flight have reserved) and says what happens when it is reached: `pause` (the turn waits at a
 * `budget` waitpoint a person approves once there is room) or `fail` (the turn fails with
 * `budget_exceeded`).
 */
export const BUDGET_SCOPE_KINDS = ['session', 'project', 'app', 'end_user', 'agent', 'user'] as const;
export type BudgetScopeKind = (typeof BUDGET_SCOPE_KINDS)[number];

export const BUDGET_PERIODS = ['lifetime', 'day', 'month'] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

export const BUDGET_ON_EXCEEDED = ['pause', 'fail'] as const;
export type BudgetOnExceeded = (typeof BUDGET_ON_EXCEEDED)[number];

export const BUDGET_LIMIT_KEYS = ['cost_microusd', 'tokens', 'model_calls', 'tool_calls', 'turns', 'wall_time_s'] as const;
export type BudgetLimitKey = (typeof BUDGET_LIMIT_KEYS)[number];
export type BudgetLimits = Partial<Record<BudgetLimitKey, number>>;

export interface Budget {
  id: string;
  /** The account (product user) whose ledger rows it sums: the caller's, or the named user's for a `user` scope. */
  accountId: string;
  createdBy: string;
  scopeKind: BudgetScopeKind;
  scopeId: string;
  /** The app it was made through (an app-bound key): it then covers only that app's end users, whatever its scope; null: the account's. */
  appId: string | null;
  limits: BudgetLimits;
  period: BudgetPeriod;
  onExceeded: BudgetOnExceeded;
  metadata: Record<string, string>;
  createdAt: Date;
  updatedAt: Date;
}

/** What a budget's scope has spent in its current period, per limit key (committed plus reserved where asked). */
export type BudgetSpent = Record<BudgetLimitKey, number>;
