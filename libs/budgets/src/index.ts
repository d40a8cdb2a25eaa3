// Budgets: limits on what a scope (a session or its tree, a project, an app, an end user, an agent,
// an account) spends per period, checked before every model and tool call of a turn in scope.
export { type Budget, BUDGET_LIMIT_KEYS, BUDGET_ON_EXCEEDED, BUDGET_PERIODS, BUDGET_SCOPE_KINDS, type BudgetLimitKey, type BudgetLimits, type BudgetOnExceeded, type BudgetPeriod, type BudgetScopeKind, type BudgetSpent } from './budget.types.js';
// Enforcement (the worker's gate before each call, and a budget waitpoint's approval).
export { BUDGET_COVERS, BUDGETED, type CallEstimate, budgetsInScope, releaseRun, reserveCall, type ScopedBudget, spentInPeriods } from './budget-enforcement.sql.js';
export { type BudgetReached, firstReached } from './budget-room.js';
