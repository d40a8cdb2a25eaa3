import { AsyncLocalStorage } from 'node:async_hooks';
import { endSpan, SESSION_ATTRIBUTE, type Span, startSpan, type StoredTraceContext, storedTraceContext, withSpan } from '#libs/telemetry';
import type { InputMode } from '../tables/input.entity.js';

/**
 * The `accept_input` span of each accepted input, and the trace context its frozen config stores
 * (the run's spans, on whichever worker, are children of it). Tracing off: nothing here runs
 * (newInputRow tests `tracingOn()` first; the acceptances call `acceptingInput` only while on).
 *
 * An acceptance the api serves (a message, a session created with its input) runs inside
 * `acceptingInput`, so the span covers its transaction; the input made inside it is that span's.
 * An input made anywhere else (a subagent's or cooperation member's input made by a run, an
 * automation's fire) gets its own `accept_input` child of the active span, ended once the row is
 * made: every input has one, and its turn joins the trace of whatever made it.
 */

/** The enclosing acceptance's span, and the session of the input row it built (known once the owner's session was read). */
interface Accepting {
  span: Span;
  sessionId: string | null;
}

const accepting = new AsyncLocalStorage<Accepting>();

/** Runs an acceptance inside an `accept_input` span (a child of the request's span); call only while tracing is on. */
export async function acceptingInput<T>(work: () => Promise<T>): Promise<T> {
  const span = startSpan('accept_input');
  if (!span) return work();
  const state: Accepting = { span, sessionId: null };
  try {
    const value = await accepting.run(state, () => withSpan(span, work));
    // The span names its session (and so is kept in that session's store) only once the acceptance
    // succeeded: its input row is built only after the owner-scoped read found the session, so a
    // caller refused (no such session, another owner's) never stores a span under it.
    if (state.sessionId !== null) span.setAttribute(SESSION_ATTRIBUTE, state.sessionId);
    endSpan(span);
    return value;
  } catch (error) {
    endSpan(span, error);
    throw error;
  }
}

/** The trace context a new input stores (call only while tracing is on): its `accept_input` span's. */
export function inputTraceContext(sessionId: string, inputId: string, mode: InputMode): StoredTraceContext | undefined {
  const enclosing = accepting.getStore();
  if (enclosing) {
    // The last row made wins: an acceptance inserts one input, but may build its row twice (a fast
    // path that lost a race retries under the session lock). The session is named at the end.
    enclosing.sessionId = sessionId;
    enclosing.span.setAttributes({ 'yuxi.input_id': inputId, 'yuxi.input.mode': mode });
    return withSpan(enclosing.span, storedTraceContext);
  }
  // Made by the server's own work (a run, a fire) for a session it already holds.
  const span = startSpan('accept_input', { attributes: { [SESSION_ATTRIBUTE]: sessionId, 'yuxi.input_id': inputId, 'yuxi.input.mode': mode } });
  const stored = withSpan(span, storedTraceContext);
  endSpan(span);
  return stored;
}
