import type { HeldTurn, InputTrace } from '#libs/engine';
import { type Attributes, type Link, linkTo, type StoredTraceContext } from '#libs/telemetry';

/** A valid W3C traceparent: its trace id and span id (both not all zeros). */
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
const ZEROS = /^0+$/;

/** Something a run consumed with the trace context stored with it, and the attributes that name it on the link. */
export interface ConsumedContext {
  trace: StoredTraceContext | null | undefined;
  attributes: Attributes;
}

/**
 * The links of a run's `invoke_agent` span to what it consumed that came with a context other than
 * the run's own (`config.trace`, its turn's first input, which is its parent): the other inputs of
 * a claimed batch, a yield's steers, the request that answered its waitpoint. A context that is
 * absent, invalid or the run's own gives no link. Linear in what the run consumed (a claim's or a
 * yield's batch, MAX_STEER_BATCH at most, or one waitpoint).
 */
export function consumedLinks(own: StoredTraceContext | null | undefined, consumed: readonly ConsumedContext[]): Link[] {
  const links: Link[] = [];
  for (const { trace, attributes } of consumed) {
    if (!trace || trace.traceparent === own?.traceparent) continue;
    const match = TRACEPARENT.exec(trace.traceparent);
    if (!match || ZEROS.test(match[1]!) || ZEROS.test(match[2]!)) continue;
    links.push(linkTo(match[1]!, match[2]!, { 'yuxi.link.reason': 'input', ...attributes }));
  }
  return links;
}

/** Inputs a run consumed, as what its links name them by (`yuxi.input_id`). */
export function consumedInputs(inputs: readonly InputTrace[] | undefined): ConsumedContext[] {
  return (inputs ?? []).map((input) => ({ trace: input.trace, attributes: { 'yuxi.input_id': input.inputId } }));
}

/**
 * What the run just claimed consumed (tracing on only): a fresh claim's batch of inputs; a resumed
 * run the response that resolved the waitpoint of the run before (the context its step stored).
 */
export function claimedContexts(held: Pick<HeldTurn, 'fresh' | 'run' | 'steps' | 'inputTraces'>): ConsumedContext[] {
  const consumed = consumedInputs(held.inputTraces);
  const before = held.run.resumeFromRunId;
  if (held.fresh || !before) return consumed;
  const waitpoint = held.steps.find((step) => step.kind === 'waitpoint' && step.runId === before);
  if (waitpoint?.output.trace) consumed.push({ trace: waitpoint.output.trace, attributes: waitpoint.ref ? { 'yuxi.waitpoint.id': waitpoint.ref } : {} });
  return consumed;
}
