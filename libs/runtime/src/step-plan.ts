import type { CommittedStep } from '#libs/turns';

/**
 * The step executor's decision, as a pure function of what the turn has committed: which step
 * comes next. A run that takes a turn over plans from the same record, so a committed step is
 * never repeated (a stored model answer is settled, not asked again).
 */
export type NextStep = { action: 'call_model' } | { action: 'settle'; text: string; fromRunId: string };

/**
 * Steps after the last input the turn took are what count: a model call whose answer is stored and
 * asked for no tool settles the turn with that answer; anything else needs a (new) model call.
 */
export function planNextStep(steps: readonly CommittedStep[]): NextStep {
  const last = steps.at(-1);
  if (last && last.kind === 'model_call' && last.status === 'completed' && (last.output.tool_calls?.length ?? 0) === 0) {
    return { action: 'settle', text: last.output.text ?? '', fromRunId: last.runId };
  }
  return { action: 'call_model' };
}
