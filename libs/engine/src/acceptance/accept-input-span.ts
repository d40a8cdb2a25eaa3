import { AsyncLocalStorage } from 'node:async_hooks';
import { endSpan, MAX_TRACESTATE_LENGTH, SESSION_ATTRIBUTE, type Span, startSpan, type StoredTraceContext, storedTraceContext, tracingOn, withSpan } from '#libs/telemetry';
import type { InputMode } from '../tables/input.entity.js';

/**
 * The `accept_input` span of each accepted input, and the trace context its frozen config stores
 * (the run's spans, on whichever worker, are children of it). Tracing off: nothing here runs
 * (newInputRow tests `tracingOn()` first; `acceptingInput` calls its work at once).
 *
 * An acceptance the api serves (a message, a session created with its input) runs inside
 * `acceptingInput`, so the span covers its transaction; the input made inside it is that span's.
 * An input made anywhere else (a subagent's or cooperation member's input made by a run, an
 * automation's fire) gets its own `accept_input` child of the active span, ended once the row is
 * made: every input has one, and its turn joins the trace of whatever made it.
 */

const accepting = new AsyncLocalStorage<Span>();

/** Runs an acceptance inside an `accept_input` span (a child of the request's span). */
export async function acceptingInput<T>(sessionId: string | null, work: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return work();
  const span = startSpan('accept_input', { attributes: sessionId === null ? undefined : { [SESSION_ATTRIBUTE]: sessionId } });
  if (!span) return work();
  try {
    const value = await accepting.run(span, () => withSpan(span, work));
    endSpan(span);
    return value;
  } catch (error) {
    endSpan(span, error);
    throw error;
  }
}

/** The trace context a new input stores (call only while tracing is on): its `accept_input` span's. */
export function inputTraceContext(sessionId: string, inputId: string, mode: InputMode): StoredTraceContext | undefined {
  const attributes = { [SESSION_ATTRIBUTE]: sessionId, 'yuxi.input_id': inputId, 'yuxi.input.mode': mode };
  const enclosing = accepting.getStore();
  if (enclosing) {
    // The last row made wins: an acceptance inserts one input, but may build its row twice (a fast
    // path that lost a race retries under the session lock).
    enclosing.setAttributes(attributes);
    return bounded(withSpan(enclosing, storedTraceContext));
  }
  const span = startSpan('accept_input', { attributes });
  const stored = withSpan(span, storedTraceContext);
  endSpan(span);
  return bounded(stored);
}

/** A tracestate past the W3C bound is dropped whole (the propagator bounds what it reads; this bounds what is stored). */
function bounded(stored: StoredTraceContext | undefined): StoredTraceContext | undefined {
  if (stored?.tracestate === undefined || stored.tracestate.length <= MAX_TRACESTATE_LENGTH) return stored;
  return { traceparent: stored.traceparent };
}
