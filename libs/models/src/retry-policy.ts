import { setTimeout as delay } from 'node:timers/promises';
import { ModelError, type ModelEvent, type ModelProvider, type ModelRequest } from './model.types.js';

export interface RetryDelayOptions {
  baseMs?: number;
  maxMs: number;
  random?: () => number;
}

/**
 * The wait before retry `attempt` (0 = the first retry): capped exponential backoff with full
 * jitter, so that many runs failing together do not retry in lockstep. A provider's Retry-After is
 * a floor; one longer than `maxMs` gives null: give up rather than hold a run longer than allowed.
 */
export function retryDelayMs(attempt: number, retryAfterMs: number | null, { baseMs = 500, maxMs, random = Math.random }: RetryDelayOptions): number | null {
  if (retryAfterMs !== null && retryAfterMs > maxMs) return null;
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt));
  const jittered = Math.floor(random() * ceiling);
  return Math.max(jittered, retryAfterMs ?? 0);
}

export interface StreamRetryOptions {
  maxRetries: number;
  maxDelayMs: number;
  /** Called before each wait; `attempt` counts retries from 0, as retryDelayMs does. */
  onRetry?: (error: ModelError, attempt: number, delayMs: number) => void;
  /** Must reject when `signal` aborts; the default is an abortable timer. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
}

const abortableSleep = (ms: number, signal: AbortSignal): Promise<void> => delay(ms, undefined, { signal });

/**
 * Streams one model call, retrying it while nothing has been streamed yet: once an event has gone
 * out, a retry would duplicate it, so a later failure is final. Only retryable ModelErrors are
 * retried; anything else (an abort above all) propagates untouched.
 */
export async function* streamWithRetries(provider: ModelProvider, request: ModelRequest, options: StreamRetryOptions): AsyncGenerator<ModelEvent> {
  const sleep = options.sleep ?? abortableSleep;
  for (let attempt = 0; ; attempt++) {
    let streamed = false;
    let failure: unknown;
    try {
      for await (const event of provider.stream(request)) {
        streamed = true;
        yield event;
      }
      return;
    } catch (error) {
      failure = error;
    }
    if (!(failure instanceof ModelError) || !failure.retryable || streamed || attempt >= options.maxRetries || request.signal.aborted) throw failure;
    const wait = retryDelayMs(attempt, failure.retryAfterMs, { maxMs: options.maxDelayMs, random: options.random });
    if (wait === null) throw failure;
    options.onRetry?.(failure, attempt, wait);
    await sleep(wait, request.signal);
  }
}
