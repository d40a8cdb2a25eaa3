import type { CommittedStep, ToolCallSpec, WaitpointKind } from '#libs/turns';

/** Who runs a tool, as the planner needs to know it (null: the agent has no such tool). */
export interface ToolPolicy {
  executorOf(name: string): 'client' | 'user' | 'server' | null;
  /** Whether a server call needs the user's approval first (agent mode, tool flag, session trust). */
  needsApproval(name: string): boolean;
  idempotent(name: string): boolean;
  /** An error text when the call's arguments do not match the tool's schema, else null. */
  invalidArguments(call: ToolCallSpec): string | null;
}

export interface PlannedOutcome {
  success: boolean;
  output: string;
}

/**
 * The step executor's decision, as a pure function of what the turn has committed since its last
 * input: the next step. A run that resumes or takes a turn over plans from the same record, so a
 * committed step is never repeated: a stored model answer is settled, a stored tool result reused.
 */
export type NextStep =
  | { action: 'call_model' }
  | { action: 'settle'; text: string; fromRunId: string }
  /** A result that needs no execution: invalid arguments, unknown tool, rejection, an answer, or an unknown outcome. */
  | { action: 'record'; call: ToolCallSpec; outcome: PlannedOutcome }
  | { action: 'execute'; call: ToolCallSpec }
  | { action: 'wait'; kind: WaitpointKind; calls: ToolCallSpec[] };

export const OUTCOME_UNKNOWN =
  'outcome_unknown: the worker running this call stopped before its result was stored, and the tool is not declared idempotent, so it was not run again. It may or may not have taken effect.';

/**
 * After a model call that asked for tools, each call in order: a stored result is done; invalid
 * arguments and unknown tools get an error result; an answered question or a rejected approval is
 * recorded; a server call runs when it needs no approval or was approved (one that started but
 * stored nothing runs again only when idempotent). Calls that need a person or the client wait,
 * approvals first, then questions, then client tools; when every call has a result the model is
 * called again.
 */
export function planNextStep(steps: readonly CommittedStep[], policy: ToolPolicy): NextStep {
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
  for (const step of after) {
    const response = step.kind === 'waitpoint' ? step.output.response : undefined;
    if (response?.type === 'answer') for (const a of response.answers) answers.set(a.question_id, a.answer);
    if (response?.type === 'approval') for (const d of response.decisions) decisions.set(d.call_id, d);
  }

  const waiting: Record<'approval' | 'question' | 'client_tool', ToolCallSpec[]> = { approval: [], question: [], client_tool: [] };
  for (const call of calls) {
    if (done.has(call.call_id)) continue;
    const executor = policy.executorOf(call.name);
    if (executor === null) return { action: 'record', call, outcome: { success: false, output: `Unknown tool ${call.name}` } };
    const invalid = policy.invalidArguments(call);
    if (invalid !== null) return { action: 'record', call, outcome: { success: false, output: invalid } };
    if (executor === 'user') {
      const answer = answers.get(call.call_id);
      if (answer === undefined) waiting.question.push(call);
      else return { action: 'record', call, outcome: { success: true, output: Array.isArray(answer) ? answer.join(', ') : answer } };
      continue;
    }
    if (executor === 'client') {
      waiting.client_tool.push(call);
      continue;
    }
    if (started.has(call.call_id)) {
      return policy.idempotent(call.name) ? { action: 'execute', call } : { action: 'record', call, outcome: { success: false, output: OUTCOME_UNKNOWN } };
    }
    const decision = decisions.get(call.call_id);
    if (decision?.decision === 'reject') {
      const reason = decision.message ? `: ${decision.message}` : '';
      return { action: 'record', call, outcome: { success: false, output: `The user rejected this call of ${call.name}${reason}` } };
    }
    if (!decision && policy.needsApproval(call.name)) {
      waiting.approval.push(call);
      continue;
    }
    return { action: 'execute', call };
  }
  for (const kind of ['approval', 'question', 'client_tool'] as const) {
    if (waiting[kind].length > 0) return { action: 'wait', kind, calls: waiting[kind] };
  }
  return { action: 'call_model' };
}
