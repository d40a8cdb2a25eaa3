import { MODEL_ERROR_CODES, ModelError, type ModelEvent, type ModelProvider, type ModelRequest } from '#libs/models';
import { metrics } from '#libs/metrics';

/**
 * The provider, measured: each call (a retry is a call of its own) is counted by outcome and
 * timed, and the usage it reports is added to the token counters. Outcomes: `ok` (the stream
 * ended), `stopped` (the run stopped reading it: a steer, a lost lease), `aborted` (a cancel,
 * a shutdown, the turn's time limit), a model error code, or `error`.
 */
export function measuredProvider(provider: ModelProvider): ModelProvider {
  return { provider: provider.provider, stream: (request) => measure(provider, request) };
}

async function* measure(provider: ModelProvider, request: ModelRequest): AsyncGenerator<ModelEvent> {
  const started = performance.now();
  let outcome = 'stopped';
  try {
    for await (const event of provider.stream(request)) {
      if (event.type === 'usage') metrics.modelUsage(provider.provider, event.usage);
      yield event;
    }
    outcome = 'ok';
  } catch (error) {
    outcome = modelCallOutcome(error, request.signal);
    throw error;
  } finally {
    metrics.modelCall(provider.provider, outcome, (performance.now() - started) / 1000);
  }
}

/** A failed call's outcome label: a known model error code, `aborted`, or `error` (codes from scripts or providers outside the catalogue stay out of the label set). */
export function modelCallOutcome(error: unknown, signal: AbortSignal): string {
  if (signal.aborted) return 'aborted';
  if (error instanceof ModelError && (MODEL_ERROR_CODES as readonly string[]).includes(error.code)) return error.code;
  return 'error';
}
