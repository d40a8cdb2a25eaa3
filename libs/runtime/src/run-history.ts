import type { BudgetReached, PublicError, CommittedStep } from '#libs/engine';
import type { BuiltContext } from './context-manager.js';
import type { ModelCallResult } from './model-call-step.js';
import type { ToolPolicy, TurnBudget, TurnKind } from './step-plan.js';

/**
 * What a run recorded as it went, in order: each is the result of one command the executor
 * performed (a committed step, a look at the steer queue, a model call's answer or its overflow),
 * or a model call a tool's MCP sampling spent. Nothing in it changes once recorded.
 */
export type RunFact =
  /** A step committed in this run (a model call that asked for tools, a tool result, a coordination, a resolved wait, a manual compaction). */
  | { type: 'step'; step: CommittedStep }
  /** The steer queue was looked at a step boundary. */
  | { type: 'steers_looked'; waiting: boolean }
  /** The waiting steers joined: the turn's next run goes on from a new input, with no steps since. */
  | { type: 'steers_joined' }
  /** A model call answered (or yielded to a steer mid-stream); `retry`: the one retry after an overflow. */
  | { type: 'model_called'; result: ModelCallResult; retry: boolean }
  /**
   * The provider refused a model call as too long for its window. `shown`: the call had shown
   * something first. `error`: the provider's error as a turn would fail with it; `tooLarge`: the
   * failure when compaction cannot help (`context_window_exceeded`).
   */
  | { type: 'model_overflowed'; retry: boolean; shown: boolean; sent: BuiltContext; cause: unknown; error: PublicError; tooLarge: PublicError }
  /** The context was compacted after an overflow: the call is retried once with it. */
  | { type: 'overflow_compacted'; context: BuiltContext }
  /** A tool's MCP server asked the turn's model for a completion: one of the turn's model calls. */
  | { type: 'sampled' }
  /**
   * The budgets in scope were checked before the next call (a budgeted turn only): null, the call
   * may start (its estimate is reserved); else the budget without room.
   */
  | { type: 'budget_checked'; reached: BudgetReached | null };

/** The agent's per-turn limits. */
export interface TurnLimits {
  maxModelCalls: number;
  maxToolCalls: number;
}

/**
 * Everything the decider reads: what the turn had committed when this run began, what the turn's
 * earlier runs spent, the agent's limits and tools, and the facts this run recorded since. A new
 * fact makes a new history (`withFact`); nothing is changed in place.
 */
export interface RunHistory {
  readonly kind: TurnKind;
  readonly policy: ToolPolicy;
  readonly limits: TurnLimits;
  /** A budget covers the session: each model and tool call is checked against the budgets first. */
  readonly budgeted: boolean;
  /** Model and tool calls the turn's earlier runs made (all of them, read when this run began). */
  readonly spentBefore: { readonly modelCalls: number; readonly toolCalls: number };
  /** The turn's committed steps since its last input, as this run found them. */
  readonly claimed: readonly CommittedStep[];
  readonly facts: readonly RunFact[];
}

export function withFact(history: RunHistory, fact: RunFact): RunHistory {
  return { ...history, facts: [...history.facts, fact] };
}

/** The turn's committed steps since its last input: what was found, then this run's, from the last join of steers on. */
export function stepsSinceInput(history: RunHistory): CommittedStep[] {
  const joined = history.facts.findLastIndex((fact) => fact.type === 'steers_joined');
  const steps = (facts: readonly RunFact[]): CommittedStep[] => facts.flatMap((fact) => (fact.type === 'step' ? [fact.step] : []));
  return joined < 0 ? [...history.claimed, ...steps(history.facts)] : steps(history.facts.slice(joined + 1));
}

/**
 * The limits and what the turn has spent, counted from the record: the earlier runs' calls, then
 * this run's. A model call counts when it is made (a retry after an overflow is the same call; a
 * sampling request is one more); a tool call counts once, when its row first appears in the turn
 * (a call that had started before, and counted then, adds nothing when its result is stored).
 */
export function spent(history: RunHistory): TurnBudget {
  let modelCalls = history.spentBefore.modelCalls;
  let toolCalls = history.spentBefore.toolCalls;
  const toolRows = new Set(history.claimed.filter((step) => step.kind === 'tool_call').map((step) => step.ref));
  for (const fact of history.facts) {
    if (fact.type === 'sampled' || ((fact.type === 'model_called' || fact.type === 'model_overflowed') && !fact.retry)) modelCalls += 1;
    if (fact.type !== 'step' || fact.step.kind !== 'tool_call') continue;
    if (!toolRows.has(fact.step.ref)) toolCalls += 1;
    toolRows.add(fact.step.ref);
  }
  return { ...history.limits, modelCalls, toolCalls };
}

/**
 * The model calls a tool's MCP sampling may spend: `budgets` checks a budgeted turn's budgets
 * before a request of about `tokens` (and reserves it; null when the turn has no budget or every
 * budget has room), then `take` counts one more, or refuses (false) at the turn's limit.
 */
export interface ModelCallAllowance {
  readonly limit: number;
  take(): boolean;
  budgets(tokens: number): Promise<BudgetReached | null>;
}
