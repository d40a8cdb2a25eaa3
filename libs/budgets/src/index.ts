// Budgets: limits on what a scope (a session or its tree, a project, an app, an end user, an agent,
// an account) spends per period, checked before every model and tool call of a turn in scope.
export { type Budget, BUDGET_LIMIT_KEYS, BUDGET_ON_EXCEEDED, BUDGET_PERIODS, BUDGET_SCOPE_KINDS, type BudgetLimitKey, type BudgetLimits, type BudgetOnExceeded, type BudgetPeriod, type BudgetScopeKind, type BudgetSpent } from './budget.types.js';
