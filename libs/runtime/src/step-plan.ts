import type { ToolExecutor, ToolMedia } from '#libs/tools';
import type { CommandEnding, CommittedStep, SamplingCall, ToolCallSpec, WaitpointKind, WaitpointResponse } from '#libs/engine';

/** Who runs a tool, as the planner needs to know it (null: the agent has no such tool). */
export interface ToolPolicy {
  executorOf(name: string): ToolExecutor | null;
  /** Whether a server call needs the user's approval first (agent mode, tool flag, session trust). */
  needsApproval(name: string): boolean;
  idempotent(name: string): boolean;
  /** The call's arguments checked against the tool's schema: the parsed value, or an error text for the model. */
  checkArguments(call: ToolCallSpec): CheckedArguments;
}

export type CheckedArguments = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** The agent's per-turn limits and what the turn has spent so far (all its runs). */
export interface TurnBudget {
  maxModelCalls: number;
  maxToolCalls: number;
  modelCalls: number;
  toolCalls: number;
}

export type TurnLimitCode = 'turn_model_call_limit' | 'turn_tool_call_limit';

export interface PlannedOutcome {
  success: boolean;
  output: string;
  /** The model calls the call made (an MCP server's sampling requests): in the ledger and the run's and turn's usage with the result. */
  sampling?: SamplingCall[];
  /** How long the call ran, in ms. */
  wallMs?: number;
  /** Images (or audio) the tool returned: stored as session files with the result. */
  media?: ToolMedia[];
  /** A command in the session's workspace: how it ended (its command_execution item). */
  command?: CommandEnding;
}

/**
 * The step executor's decision, as a pure function of what the turn has committed since its last
 * input: the next step. A run that resumes or takes a turn over plans from the same record, so a
 * committed step is never repeated: a stored model answer is settled, a stored tool result reused.
 */
export type NextStep =
  | { action: 'call_model' }
  | { action: 'settle'; text: string; fromRunId: string }
  /**
   * A result that needs no execution: invalid arguments, unknown tool, rejection, an answer, or an
   * unknown outcome. `started`: the call already has a `started` step (it counted then).
   */
  | { action: 'record'; call: ToolCallSpec; outcome: PlannedOutcome; started: boolean }
  /** A server call to run with its checked arguments; `started`: an idempotent call run again under its existing record. */
  | { action: 'execute'; call: ToolCallSpec; args: Record<string, unknown>; started: boolean }
  /**
   * A server call that stopped for the user (an MCP elicitation) was answered: the answer goes to
   * the call still open in the worker that holds it, which is then followed to its end. Where no
   * worker holds it any more, an idempotent call runs again and another's outcome is unknown.
   */
  | { action: 'resume_elicitation'; call: ToolCallSpec; args: Record<string, unknown>; response: ElicitationResponse; idempotent: boolean; started: true }
  /** A coordinator's call on its members (create, message, interrupt): one committed step, never `started` first. */
  | { action: 'coordinate'; call: ToolCallSpec; args: Record<string, unknown> }
  | { action: 'wait'; kind: WaitpointKind; calls: ToolCallSpec[] }
  /** The next step would pass a per-turn limit: the turn fails with `code`. */
  | { action: 'fail'; code: TurnLimitCode; message: string }
  /** A compaction turn (`yuxi.session.input.compact`) compacts the context... */
  | { action: 'compact' }
  /** ...and, once that is committed, completes with no answer. */
  | { action: 'finish' };

/** A turn of messages, or one that only compacts the context (a manual compaction). */
export type TurnKind = 'message' | 'compaction';

/** The user's answer to an MCP server's elicitation, as the waitpoint's step stores it. */
export type ElicitationResponse = Extract<WaitpointResponse, { type: 'elicitation' }>;

export const OUTCOME_UNKNOWN =
  'outcome_unknown: the worker running this call stopped before its result was stored, and the tool is not declared idempotent, so it was not run again. It may or may not have taken effect.';

/**
 * After a model call that asked for tools, each call in order: a stored result is done; invalid
 * arguments and unknown tools get an error result; an answered question or a rejected approval is
 * recorded; a server call runs when it needs no approval or was approved (one that started but
 * stored nothing runs again only when idempotent). Calls that need a person or the client wait,
 * approvals first, then questions, then client tools, then members (a coordinator's wait); a
 * coordinator's call on its members is one committed step. When every call has a result the model
 * is called again.
 */
export function planNextStep(steps: readonly CommittedStep[], policy: ToolPolicy, budget?: TurnBudget, kind: TurnKind = 'message'): NextStep {
  if (kind === 'compaction') return steps.some((step) => step.kind === 'compaction' && step.status === 'completed') ? { action: 'finish' } : { action: 'compact' };
  const next = nextStep(steps, policy);
  return budget ? withinBudget(next, budget) : next;
}

/**
 * The per-turn limits on a planned step: a model call beyond `maxModelCalls`, a new server call
 * beyond `maxToolCalls`, or a waitpoint whose calls would pass it fails the turn instead. A call
 * that started before (and counted then) and a recorded result spend nothing new.
 */
export function withinBudget(next: NextStep, budget: TurnBudget): NextStep {
  if (next.action === 'call_model' && budget.modelCalls >= budget.maxModelCalls) {
    return { action: 'fail', code: 'turn_model_call_limit', message: `The turn reached its limit of ${budget.maxModelCalls} model calls` };
  }
  const newCalls = next.action === 'wait' ? next.calls.length : (next.action === 'execute' && !next.started) || next.action === 'coordinate' ? 1 : 0;
  const limit = next.action === 'wait' ? budget.toolCalls + newCalls > budget.maxToolCalls : newCalls > 0 && budget.toolCalls >= budget.maxToolCalls;
  if (limit) return { action: 'fail', code: 'turn_tool_call_limit', message: `The turn reached its limit of ${budget.maxToolCalls} tool calls` };
  return next;
}

function nextStep(steps: readonly CommittedStep[], policy: ToolPolicy): NextStep {
  const m = steps.findLastIndex((step) => step.kind === 'model_call' && step.status === 'completed');
  if (m < 0) return { action: 'call_model' };
  const model = steps[m]!;
  const calls = model.output.tool_calls ?? [];
  if (calls.length === 0) return { action: 'settle', text: model.output.text ?? '', fromRunId: model.runId };

  const after = steps.slice(m + 1);
  const done = new Set(after.filter((s) => s.kind === 'tool_call' && s.status === 'completed').map((s) => s.ref));
  const started = new Set(after.filter((s) => s.kind === 'tool_call' && s.status === 'started').map((s) => s.ref));
  const answers = new Map<string, string | string[]>();
  const decisions = new Map<string, { decision: string; message?: string }>();
  const cooperation = new Map<string, PlannedOutcome>();
  // The latest answer per call: a call may ask again after an answer, and only the newest is pending.
  const elicitations = new Map<string, ElicitationResponse>();
  for (const step of after) {
    // A budget waitpoint's decision (call_id "budget") is the budget's alone (run-decider reads it):
    // never a decision on a tool call, even one whose id happens to be "budget".
    const response = step.kind === 'waitpoint' && step.output.kind !== 'budget' ? step.output.response : undefined;
    if (response?.type === 'elicitation') elicitations.set(response.call_id, response);
    if (response?.type === 'answer') for (const a of response.answers) answers.set(a.question_id, a.answer);
    if (response?.type === 'approval') for (const d of response.decisions) decisions.set(d.call_id, d);
    if (response?.type === 'cooperation') for (const [callId, outcome] of Object.entries(response.results)) cooperation.set(callId, outcome);
  }

  const waiting: Record<Exclude<WaitpointKind, 'budget'>, ToolCallSpec[]> = { approval: [], question: [], client_tool: [], cooperation: [] };
  for (const call of calls) {
    if (done.has(call.call_id)) continue;
    const executor = policy.executorOf(call.name);
    const begun = started.has(call.call_id);
    if (executor === null) return { action: 'record', call, outcome: { success: false, output: `Unknown tool ${call.name}` }, started: begun };
    const args = policy.checkArguments(call);
    if (!args.ok) return { action: 'record', call, outcome: { success: false, output: args.error }, started: begun };
    if (executor === 'user') {
      const answer = answers.get(call.call_id);
      if (answer === undefined) waiting.question.push(call);
      else return { action: 'record', call, outcome: { success: true, output: Array.isArray(answer) ? answer.join(', ') : answer }, started: begun };
      continue;
    }
    if (executor === 'client') {
      waiting.client_tool.push(call);
      continue;
    }
    if (executor === 'cooperation') {
      const outcome = cooperation.get(call.call_id);
      if (outcome) return { action: 'record', call, outcome, started: false };
      waiting.cooperation.push(call);
      continue;
    }
    if (executor === 'coordinator') return { action: 'coordinate', call, args: args.value };
    const elicited = begun ? elicitations.get(call.call_id) : undefined;
    if (elicited) return { action: 'resume_elicitation', call, args: args.value, response: elicited, idempotent: policy.idempotent(call.name), started: true };
    if (begun) {
      return policy.idempotent(call.name)
        ? { action: 'execute', call, args: args.value, started: true }
        : { action: 'record', call, outcome: { success: false, output: OUTCOME_UNKNOWN }, started: true };
    }
    const decision = decisions.get(call.call_id);
    if (decision?.decision === 'reject') {
      const reason = decision.message ? `: ${decision.message}` : '';
      return { action: 'record', call, outcome: { success: false, output: `The user rejected this call of ${call.name}${reason}` }, started: false };
    }
    if (!decision && policy.needsApproval(call.name)) {
      waiting.approval.push(call);
      continue;
    }
    return { action: 'execute', call, args: args.value, started: false };
  }
  // A person first, then the client; members are waited for last, once nothing else is pending.
  for (const kind of ['approval', 'question', 'client_tool', 'cooperation'] as const) {
    if (waiting[kind].length > 0) return { action: 'wait', kind, calls: waiting[kind] };
  }
  return { action: 'call_model' };
}
