import type { EntityManager } from 'typeorm';
import { derivedId, prepared } from '#libs/database';
import type { Budget, BudgetLimits, BudgetOnExceeded, BudgetSpent } from './budget.types.js';
import { BUDGET_COLUMNS } from './budget-sql.js';
import { budgetFromRow } from './budgets.repository.js';

// A session's own budget (`yuxi.budget` of session create and update): a lifetime budget scoped
// to the session (and so to its tree when it is a root), one per session. Functions over the
// caller's transaction, so the session's write and its budget's commit together.

/** Its id, derived from the session's: a session has at most one, found without an index of its own. */
export function sessionBudgetId(sessionId: string): string {
  return derivedId(`session-budget:${sessionId}`);
}

/** `yuxi.budget` as the session resource shows it (`spent` on a read of the one session). */
export interface SessionBudgetView {
  id: string;
  limits: BudgetLimits;
  on_exceeded: BudgetOnExceeded;
  spent?: BudgetSpent;
}

export function sessionBudgetView(budget: Budget, spent?: BudgetSpent): SessionBudgetView {
  return { id: budget.id, limits: budget.limits, on_exceeded: budget.onExceeded, ...(spent ? { spent } : {}) };
}

/**
 * Sets the session's own budget (created, or its limits and behaviour replaced), or with null
 * removes it. `accountId` is the session owner's account (what the budget sums), `createdBy` who
 * set it, `appId` the app it was set through (an app-bound key: the app then sees it at /budgets).
 */
export async function writeSessionBudget(
  manager: EntityManager,
  session: { id: string; accountId: string; createdBy: string; appId: string | null },
  budget: { limits: BudgetLimits; onExceeded: BudgetOnExceeded } | null,
): Promise<Budget | null> {
  const id = sessionBudgetId(session.id);
  if (budget === null) {
    await manager.query(prepared(`DELETE FROM budgets WHERE id = $1`), [id]);
    return null;
  }
  const [row] = (await manager.query(
    prepared(`INSERT INTO budgets (id, account_id, created_by, scope_kind, scope_id, app_id, limits, period, on_exceeded, metadata, created_at, updated_at)
     VALUES ($1, $2, $3, 'session', $4, $7, $5, 'lifetime', $6, '{}'::jsonb, now(), now())
     ON CONFLICT (id) DO UPDATE SET limits = EXCLUDED.limits, on_exceeded = EXCLUDED.on_exceeded, period = 'lifetime', updated_at = now()
     RETURNING ${BUDGET_COLUMNS}`),
    [id, session.accountId, session.createdBy, session.id, JSON.stringify(budget.limits), budget.onExceeded, session.appId],
  )) as Record<string, unknown>[];
  return budgetFromRow(row!);
}

/** The sessions' own budgets, by session id (sessions without one are absent): one statement. */
export async function readSessionBudgets(manager: EntityManager, sessionIds: readonly string[]): Promise<Map<string, Budget>> {
  const found = new Map<string, Budget>();
  if (sessionIds.length === 0) return found;
  const rows = (await manager.query(prepared(`SELECT ${BUDGET_COLUMNS} FROM budgets WHERE id = ANY($1::uuid[])`), [sessionIds.map(sessionBudgetId)])) as Record<string, unknown>[];
  for (const row of rows) {
    const budget = budgetFromRow(row);
    found.set(budget.scopeId, budget);
  }
  return found;
}
