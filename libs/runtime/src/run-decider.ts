import { isDependencyUnavailable } from '#libs/errors';
import { ModelError } from '#libs/models';
import type { BudgetReached, CommittedStep, PublicError } from '#libs/engine';
import type { BuiltContext } from './context-manager.js';
import type { ModelCallResult } from './model-call-step.js';
import { LeaseLostError, ShuttingDownError, TurnCancelledError, TurnLimitError } from './run-errors.js';
import { type RunFact, type RunHistory, spent, stepsSinceInput } from './run-history.js';
import { type NextStep, planNextStep } from './step-plan.js';

/**
 * What stopped a run before its own work finished, and so how it ends: a lost lease writes
 * nothing more, a shutdown releases the run to another worker, a cancel settles the turn
 * cancelled, an unreachable database leaves the turn to recovery, anything else fails it.
 * `unexpected`: the error nobody classified (logged by whoever performs the ending).
 */
export type Interruption =
  | { kind: 'lease_lost' }
  | { kind: 'shutdown' }
  | { kind: 'cancel' }
  | { kind: 'database_unreachable' }
  | { kind: 'failed'; error: PublicError; unexpected?: unknown };

/** How the turn's answer is settled: one stored by an earlier run, the model's answer just now, or none (a manual compaction). */
export type SettledAnswer = { from: 'stored'; text: string } | { from: 'model'; result: ModelCallResult } | { from: 'none' };

/**
 * The next thing a run does, as the decider chose it. The executor has one handler per kind and
 * only performs it and records its result (a RunFact), or ends the run.
 */
export type RunCommand =
  /** Look at the steer queue before a model call: `pending` reads it, `announced` only when a signal or heartbeat said one came. */
  | { kind: 'look_for_steers'; lookup: 'pending' | 'announced' }
  /** Yield the run into the next run of its turn with the waiting steers; `keepShown`: what the stream showed is kept as its item. */
  | { kind: 'join_steers'; keepShown: boolean }
  /** Call the model, with the context prepared now, or (`retryWith`) the context compacted after an overflow. */
  | { kind: 'call_model'; retryWith: BuiltContext | null }
  | { kind: 'commit_model_step'; result: ModelCallResult }
  | { kind: 'run_tool'; plan: Extract<NextStep, { action: 'record' | 'execute' | 'resume_elicitation' }> }
  | { kind: 'coordinate'; plan: Extract<NextStep, { action: 'coordinate' }> }
  /** Stop at a waitpoint for a person or the client. */
  | { kind: 'suspend'; plan: Extract<NextStep, { action: 'wait' }> }
  /** A coordinator waits for its members: resolved at once, or the run stops until they settle. */
  | { kind: 'await_members'; plan: Extract<NextStep, { action: 'wait' }> }
  /** A manual compaction turn's one step. */
  | { kind: 'compact' }
  /** Compact once after the provider refused the call as too long. */
  | { kind: 'compact_after_overflow'; sent: BuiltContext; cause: unknown }
  | { kind: 'settle'; answer: SettledAnswer }
  /**
   * A budgeted turn's next call is checked against the budgets in scope first (and its estimate
   * reserved): a model call, or a server tool call (`call_id`).
   */
  | { kind: 'check_budget'; call: { kind: 'model' } | { kind: 'tool'; call_id: string } }
  /** A budget had no room: announced, then the run stops at a `budget` waitpoint (`pause`: no ending) or ends as `ending` (`fail`). */
  | { kind: 'stop_for_budget'; reached: BudgetReached; ending: Interruption | null }
  | { kind: 'close'; ending: Interruption };

/**
 * The decider: from the run's history and what arrived (an interruption: a cancel, a shutdown, a
 * lost lease, the turn's timeout), the next command. Pure: no I/O, no clock, nothing
 * changed. A run that resumes or takes a turn over decides from the same committed steps, so a
 * committed step is never repeated.
 */
export function decide(history: RunHistory, arrived: Interruption | null = null): RunCommand {
  const last = history.facts.at(-1);
  // Heard at a step boundary (before the first step, after a committed step or a join of steers).
  // A command's follow-up (the call after a look, the settlement or commit of an answer, the retry
  // after an overflow) goes ahead, and its own I/O hears the abort.
  if (arrived && (!last || last.type === 'step' || last.type === 'steers_joined')) return decideInterrupted(arrived);
  if (last?.type === 'model_called') return afterModelCall(last.result);
  if (last?.type === 'model_overflowed') return afterOverflow(last);
  if (last?.type === 'overflow_compacted') return { kind: 'call_model', retryWith: last.context };
  if (last?.type === 'budget_checked' && last.reached) return { kind: 'stop_for_budget', reached: last.reached, ending: last.reached.onExceeded === 'fail' ? budgetEnding(last.reached) : null };
  const steps = stepsSinceInput(history);
  // A person rejected the turn's budget waitpoint: the turn fails as if the budget said `fail`.
  if (budgetRejected(steps)) return { kind: 'close', ending: { kind: 'failed', error: BUDGET_REJECTED } };
  // The budgets had room for the call planned now (nothing was committed since the check).
  const checked = last?.type === 'budget_checked';
  const plan = planNextStep(steps, history.policy, spent(history), history.kind);
  switch (plan.action) {
    case 'call_model':
      // A safe boundary: every call of the last model step has its result, and steers join here.
      // After a step (a tool round, seconds long) the queue is read, so a steer that arrived
      // meanwhile is never left to the stream; before the first model call (just claimed, taken
      // over, or joined) only an announced one is looked for. A budgeted turn checks its budgets
      // once no steer joins, right before the call.
      if (checked) return { kind: 'call_model', retryWith: null };
      if (last?.type === 'steers_looked') {
        if (last.waiting) return { kind: 'join_steers', keepShown: false };
        return history.budgeted ? { kind: 'check_budget', call: { kind: 'model' } } : { kind: 'call_model', retryWith: null };
      }
      return { kind: 'look_for_steers', lookup: steps.length > 0 ? 'pending' : 'announced' };
    case 'settle':
      return { kind: 'settle', answer: { from: 'stored', text: plan.text } };
    case 'finish':
      return { kind: 'settle', answer: { from: 'none' } };
    case 'fail':
      return { kind: 'close', ending: { kind: 'failed', error: { code: plan.code, message: plan.message } } };
    case 'compact':
      return { kind: 'compact' };
    case 'wait':
      return plan.kind === 'cooperation' ? { kind: 'await_members', plan } : { kind: 'suspend', plan };
    case 'coordinate':
      if (history.budgeted && !checked) return { kind: 'check_budget', call: { kind: 'tool', call_id: plan.call.call_id } };
      return { kind: 'coordinate', plan };
    case 'execute':
      // A call that runs now (a new one, or an idempotent one run again) is checked; a recorded result costs nothing.
      if (history.budgeted && !checked) return { kind: 'check_budget', call: { kind: 'tool', call_id: plan.call.call_id } };
      return { kind: 'run_tool', plan };
    case 'record':
    case 'resume_elicitation':
      return { kind: 'run_tool', plan };
    default:
      // A new planner action without its case here fails to compile.
      throw new Error(`unplanned step ${(plan satisfies never as { action: string }).action}`);
  }
}

const BUDGET_REJECTED: PublicError = { code: 'budget_exceeded', message: 'A budget in the session\'s scope has no room, and its waitpoint was rejected' };

/** How a turn ends whose budget has no room and says `fail`. */
export function budgetEnding(reached: BudgetReached): Extract<Interruption, { kind: 'failed' }> {
  return { kind: 'failed', error: { code: 'budget_exceeded', message: `Budget ${reached.budgetId} reached its ${reached.limit} limit of ${reached.limitValue} (spent ${reached.spent})` } };
}

/** Whether the turn's budget waitpoint was answered with a rejection (since its last input). */
function budgetRejected(steps: readonly CommittedStep[]): boolean {
  return steps.some((step) => {
    const response = step.kind === 'waitpoint' && step.output.kind === 'budget' ? step.output.response : undefined;
    return response?.type === 'approval' && response.decisions.some((d) => d.decision === 'reject');
  });
}

/**
 * An interruption ends the run whatever its history: the ending is the interruption's own (a lost
 * lease: nothing written; a shutdown: released; a cancel: settled cancelled; an unreachable
 * database: left to recovery; a limit, a model error or anything else: failed).
 */
export function decideInterrupted(arrived: Interruption): Extract<RunCommand, { kind: 'close' }> {
  return { kind: 'close', ending: arrived };
}

/** A model call that yielded joins the steers with what it showed; an answer settles the turn; tool calls are committed. */
function afterModelCall(result: ModelCallResult): RunCommand {
  if (result.yielded) return { kind: 'join_steers', keepShown: true };
  if (result.toolCalls.length === 0) return { kind: 'settle', answer: { from: 'model', result } };
  return { kind: 'commit_model_step', result };
}

/**
 * An overflow before anything was shown compacts once and retries the call once; a retry that
 * overflows again fails the turn with context_window_exceeded (never a loop), and one after text
 * was shown fails with the provider's error.
 */
function afterOverflow(fact: Extract<RunFact, { type: 'model_overflowed' }>): RunCommand {
  if (fact.retry) return { kind: 'close', ending: { kind: 'failed', error: fact.tooLarge } };
  if (fact.shown) return { kind: 'close', ending: { kind: 'failed', error: fact.error } };
  return { kind: 'compact_after_overflow', sent: fact.sent, cause: fact.cause };
}

/**
 * What arrived, as the decider reads it: the abort's reason when the run was aborted (a cancel, a
 * shutdown, a lost lease, the turn's timeout), else the error a command threw.
 */
export function interruptionOf(signal: AbortSignal, error: unknown): Interruption {
  const reason: unknown = signal.aborted ? signal.reason : error;
  if (reason instanceof LeaseLostError || error instanceof LeaseLostError) return { kind: 'lease_lost' };
  if (reason instanceof ShuttingDownError) return { kind: 'shutdown' };
  if (reason instanceof TurnCancelledError) return { kind: 'cancel' };
  // The database stayed unreachable past a step's retries: once the lease expires, recovery
  // continues the turn from its last committed step.
  if (isDependencyUnavailable(error)) return { kind: 'database_unreachable' };
  if (reason instanceof TurnLimitError) return { kind: 'failed', error: { code: reason.code, message: reason.message } };
  if (error instanceof ModelError) return { kind: 'failed', error: { code: error.code, message: error.message } };
  return { kind: 'failed', error: { code: 'run_failed', message: 'The run failed unexpectedly' }, unexpected: error };
}
