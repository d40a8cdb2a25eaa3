import { BUDGET_LIMIT_KEYS, type BudgetLimitKey, type BudgetOnExceeded, type BudgetScopeKind, type BudgetSpent } from './budget.types.js';
import type { ScopedBudget } from './budget-enforcement.sql.js';

/** A budget with no room: which limit was reached, its value and what was spent (committed plus held by calls in flight). */
export interface BudgetReached {
  budgetId: string;
  scope: { kind: BudgetScopeKind; id: string };
  limit: BudgetLimitKey;
  limitValue: number;
  spent: number;
  onExceeded: BudgetOnExceeded;
}

/**
 * Whether a call may start: for every limit of every budget in scope, spent + reserved < limit.
 * Null when it may; else the first budget (in the given order) and limit without room. A budget
 * whose spending is unknown counts as spending nothing.
 */
export function firstReached(budgets: readonly ScopedBudget[], spent: ReadonlyMap<string, BudgetSpent>): BudgetReached | null {
  for (const budget of budgets) {
    const used = spent.get(budget.id);
    for (const key of BUDGET_LIMIT_KEYS) {
      const limit = budget.limits[key];
      if (limit === undefined || limit === null) continue;
      const value = used?.[key] ?? 0;
      if (value >= limit) return { budgetId: budget.id, scope: { kind: budget.scopeKind, id: budget.scopeId }, limit: key, limitValue: limit, spent: value, onExceeded: budget.onExceeded };
    }
  }
  return null;
}
