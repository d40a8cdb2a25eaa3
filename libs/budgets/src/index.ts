// Budgets: limits on what a scope (a session or its tree, a project, an app, an end user, an agent,
// an account) spends per period, checked before every model and tool call of a turn in scope.
export { type Budget, BUDGET_LIMIT_KEYS, BUDGET_ON_EXCEEDED, BUDGET_PERIODS, BUDGET_SCOPE_KINDS, type BudgetLimitKey, type BudgetLimits, type BudgetOnExceeded, type BudgetPeriod, type BudgetScopeKind, type BudgetSpent } from './budget.types.js';
export { type BudgetUsage, type CallEstimate, firstBudgetWithoutRoom, type LimitReached, NO_SPENDING, periodBounds, type Room, roomFor } from './budget-room.js';
export { budgetedSql, PERIOD_START } from './budget-sql.js';
export { budgetFromRow, type BudgetPatch, BudgetsRepository, type BudgetViewer, type NewBudget, spentOf } from './budgets.repository.js';
export { readSessionBudgets, sessionBudgetId, type SessionBudgetView, sessionBudgetView, writeSessionBudget } from './session-budget.js';
export { BudgetsModule } from './budgets.module.js';
export { UsageClock, USAGE_CLOCK_MAX_OFFSET_S } from './usage-clock.js';
