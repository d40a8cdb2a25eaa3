import type { Budget, BudgetLimitKey, BudgetOnExceeded, BudgetScopeKind, LimitReached } from '#libs/budgets';
import type { ToolCallSpec, Waitpoint, WaitpointElicitation, WaitpointKind, WaitpointQuestion } from '../tables/turn.entities.js';

/**
 * A turn's waitpoint as a union by kind (the turns.waitpoint JSON column; the database checks its
 * kind: turns_waitpoint_kind_check). A question waitpoint carries its questions (and the MCP
 * elicitation that asked them, when one did); the others carry the tool calls they wait on:
 * approval decisions, the client's results, or the coordinator's waits on its members. A budget
 * waitpoint names the budget without room, the limit reached and what was spent of it.
 */
export const WAITPOINT_KINDS = ['question', 'approval', 'client_tool', 'cooperation', 'budget'] as const satisfies readonly WaitpointKind[];

/** A budget without room for a turn's next call, as its waitpoint and `yuxi.session.budget.reached` show it. */
export interface BudgetReached {
  budgetId: string;
  scope: { kind: BudgetScopeKind; id: string };
  limit: BudgetLimitKey;
  limitValue: number;
  /** What was spent of the limit in the budget's period: committed plus held by calls in flight. */
  spent: number;
  onExceeded: BudgetOnExceeded;
}

/** The budget check's answer (the first budget without room and its limit) as a BudgetReached. */
export function budgetReachedOf(found: { budget: Budget } & LimitReached): BudgetReached {
  const { budget } = found;
  return { budgetId: budget.id, scope: { kind: budget.scopeKind, id: budget.scopeId }, limit: found.limit, limitValue: found.limit_value, spent: found.spent, onExceeded: budget.onExceeded };
}

/** The one decision a budget waitpoint takes (`{"call_id": "budget", "decision": "approve" | "reject"}`). */
export const BUDGET_CALL_ID = 'budget';

interface WaitpointBase {
  id: string;
  run_id: string;
  created_at: number;
}
export type QuestionWaitpoint = WaitpointBase & { kind: 'question'; questions: WaitpointQuestion[]; elicitation?: WaitpointElicitation };
export type CallsWaitpoint = WaitpointBase & { kind: 'approval' | 'client_tool' | 'cooperation'; tool_calls: ToolCallSpec[] };
export type BudgetWaitpoint = WaitpointBase & { kind: 'budget'; budget_id: string; limit: string; spent: number };
export type TaggedWaitpoint = QuestionWaitpoint | CallsWaitpoint | BudgetWaitpoint;

// Compile-time: every tagged waitpoint is a Waitpoint (the stored shape its writers build), and every kind has a member.
export type WaitpointUnionHolds = [TaggedWaitpoint] extends [Waitpoint] ? ([Exclude<WaitpointKind, TaggedWaitpoint['kind']>] extends [never] ? true : never) : never;
const UNION_HOLDS: WaitpointUnionHolds = true;
void UNION_HOLDS;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The problem with a stored waitpoint, or null when it is one of the union's members. */
export function waitpointProblem(value: unknown): string | null {
  if (!isObject(value)) return 'not an object';
  if (typeof value.id !== 'string' || typeof value.run_id !== 'string' || typeof value.created_at !== 'number') return 'id, run_id or created_at is missing';
  if (!(WAITPOINT_KINDS as readonly unknown[]).includes(value.kind)) return `unknown kind ${String(value.kind)}`;
  if (value.kind === 'question') {
    if (!Array.isArray(value.questions)) return 'a question waitpoint without questions';
    if (value.elicitation !== undefined && !isObject(value.elicitation)) return 'a malformed elicitation';
    return null;
  }
  if (value.kind === 'budget') {
    if (typeof value.budget_id !== 'string' || typeof value.limit !== 'string' || typeof value.spent !== 'number') return 'a budget waitpoint without budget_id, limit or spent';
    return null;
  }
  if (!Array.isArray(value.tool_calls)) return `a ${value.kind} waitpoint without tool_calls`;
  if (value.elicitation !== undefined) return `a ${value.kind} waitpoint with an elicitation`;
  return null;
}

/** Reads a stored waitpoint as the union: a row that is none of its members is corrupt (an Error, not a client's fault). */
export function parseWaitpoint(value: unknown): TaggedWaitpoint {
  const problem = waitpointProblem(value);
  if (problem !== null) throw new Error(`a stored waitpoint is malformed: ${problem}`);
  return value as TaggedWaitpoint;
}
