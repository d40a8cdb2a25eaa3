import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/**
 * Where spans of a session go besides the exporter: the per-session span store (libs/traces)
 * registers itself here once the application has its database, so a session's traces can be read
 * through the API with no collector. Only spans carrying SESSION_ATTRIBUTE are handed over; a
 * write that fails drops that batch (traces are diagnostics, never a reason to fail a turn).
 */
export interface SpanSink {
  write(spans: readonly ReadableSpan[]): Promise<void>;
}

/** The attribute naming the session a span belongs to (set on every span of a request or run that has one). */
export const SESSION_ATTRIBUTE = 'yuxi.session_id';
/** The turn a span belongs to, where it is known. */
export const TURN_ATTRIBUTE = 'yuxi.turn_id';
/** The run a span belongs to, where it is known. */
export const RUN_ATTRIBUTE = 'yuxi.run_id';

let sink: SpanSink | null = null;

/** Registers (or, with null, removes) the span store. */
export function setSpanSink(next: SpanSink | null): void {
  sink = next;
}

/** The registered span store, if any. */
export function currentSpanSink(): SpanSink | null {
  return sink;
}

export type { ReadableSpan };
