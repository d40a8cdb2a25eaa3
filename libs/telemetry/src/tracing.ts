import { createHash } from 'node:crypto';
import {
  type Attributes,
  type Context,
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type TextMapGetter,
} from '@opentelemetry/api';

/**
 * The one way code of this server makes spans and carries trace context (libs, apps): a thin layer
 * on `@opentelemetry/api`. While tracing is off (the default) no provider is registered and every
 * function here returns at its first line: an echo turn pays one boolean test per would-be span.
 * `startTracing` (start-tracing.ts) registers the SDK when the settings turn tracing on.
 */

const TRACER_NAME = 'yuxi-agents-sessions';

const state = { on: false, captureContent: false };

/** Called by startTracing once its provider, context manager and propagator are registered. */
export function markTracingStarted(settings: { captureContent: boolean }): void {
  state.on = true;
  state.captureContent = settings.captureContent;
}

/** Whether this process traces. */
export function tracingOn(): boolean {
  return state.on;
}

/** OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (and tracing on): message content may go on spans. */
export function captureMessageContent(): boolean {
  return state.on && state.captureContent;
}

export { SpanKind };
export type { Attributes, Context, Link, Span };

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The parent: a stored context (`contextOf`), else the active one. */
  parent?: Context;
  /** A fixed span id (16 hex): `runSpanId`, so that a takeover can link to the span a dead worker never exported. */
  spanId?: string;
  /** When the span began, if before now (a claim's span, started once its trace context was read). */
  startTime?: Date;
}

let spanIdHint: string | undefined;

/** The span id the next span started must take (read once by the SDK's id generator). */
export function takeSpanIdHint(): string | undefined {
  const hint = spanIdHint;
  spanIdHint = undefined;
  return hint;
}

/** A started span (not made active), or undefined when tracing is off. End it with `endSpan`. */
export function startSpan(name: string, options: SpanOptions = {}): Span | undefined {
  if (!state.on) return undefined;
  spanIdHint = options.spanId;
  try {
    return trace.getTracer(TRACER_NAME).startSpan(name, { kind: options.kind, attributes: options.attributes, links: options.links, startTime: options.startTime }, options.parent ?? context.active());
  } finally {
    spanIdHint = undefined;
  }
}

/** Ends a span, recording `error` (its type and an ERROR status) when given. */
export function endSpan(span: Span | undefined, error?: unknown, attributes?: Attributes): void {
  if (!span) return;
  if (attributes) span.setAttributes(attributes);
  if (error !== undefined) recordError(span, error);
  span.end();
}

/**
 * Marks a span failed by `error`: `error.type` (per the semantic conventions) and an ERROR status
 * described by that type alone. Never the error's message: spans leave the server (a collector, the
 * session's trace route), and a message may quote what it should not (a provider's error naming a
 * key, a URL with a token, the content of a message).
 */
export function recordError(span: Span | undefined, error: unknown): void {
  if (!span) return;
  const type = String((error as { code?: unknown } | null)?.code ?? (error as Error | null)?.name ?? 'error').slice(0, 256);
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/** Runs `fn` with `span` as the active span (what child spans and outgoing `traceparent` headers use). */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
}

/** Runs `fn` inside a new active span, ended when `fn` settles (an error recorded and rethrown). Off: `fn(undefined)`. */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  const span = startSpan(name, options);
  if (!span) return fn(undefined);
  try {
    const value = await withSpan(span, () => fn(span));
    span.end();
    return value;
  } catch (error) {
    endSpan(span, error);
    throw error;
  }
}

/** Attributes on the active span (a request span learns its session once the use case knows it); nothing when there is none. */
export function setSpanAttributes(attributes: Attributes): void {
  if (!state.on) return;
  trace.getSpan(context.active())?.setAttributes(attributes);
}

/** A W3C trace context as stored with accepted work (an input's frozen config): survives queues, restarts and crashes. */
export interface StoredTraceContext {
  traceparent: string;
  tracestate?: string;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;
/** W3C: a tracestate of more than 512 characters may be dropped whole. */
export const MAX_TRACESTATE_LENGTH = 512;

/** The active span's context, as stored; undefined when off or outside a span. */
export function storedTraceContext(): StoredTraceContext | undefined {
  if (!state.on) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  if (carrier.traceparent === undefined) return undefined;
  return carrier.tracestate ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : { traceparent: carrier.traceparent };
}

/** A stored context as a parent for spans (invalid or absent: the root context, so a new trace starts). */
export function contextOf(stored: StoredTraceContext | null | undefined): Context {
  if (!state.on || !stored || !TRACEPARENT.test(stored.traceparent)) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, stored);
}

/** The trace id a stored context names (32 hex), or null. */
export function traceIdOf(stored: StoredTraceContext | null | undefined): string | null {
  const match = stored ? TRACEPARENT.exec(stored.traceparent) : null;
  return match && !/^0+$/.test(match[1]) ? match[1] : null;
}

/** The active span's trace id, or undefined (the log mixin's `trace_id`). */
export function currentTraceId(): string | undefined {
  if (!state.on) return undefined;
  const span = trace.getSpan(context.active());
  return span?.spanContext().traceId;
}

/** The active span's id, or undefined (the log mixin's `span_id`). */
export function currentSpanId(): string | undefined {
  if (!state.on) return undefined;
  return trace.getSpan(context.active())?.spanContext().spanId;
}

/** Adds `traceparent` (and `tracestate`) of the active span to an outgoing request's headers. */
export function injectTraceHeaders(headers: Record<string, string>): void {
  if (state.on) propagation.inject(context.active(), headers);
}

const headerGetter: TextMapGetter<Record<string, string | string[] | undefined>> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** The context an incoming request's `traceparent`/`tracestate` carry (the root context when none or invalid). */
export function extractHttpContext(headers: Record<string, string | string[] | undefined>): Context {
  if (!state.on) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers, headerGetter);
}

/**
 * The span id of a run's `invoke_agent` span, derived from the run's id: a worker that takes the run
 * over after a crash links its own span to this one, which the dead worker may never have exported
 * (its children that were exported name it as their parent).
 */
export function runSpanId(runId: string): string {
  const id = createHash('sha256').update(`invoke_agent:${runId}`).digest('hex').slice(0, 16);
  return /^0+$/.test(id) ? '0000000000000001' : id;
}

/** A link to a span of the same trace known by id (the lost `invoke_agent` of a run taken over). */
export function linkTo(traceId: string, spanId: string, attributes?: Attributes): Link {
  return { context: { traceId, spanId, traceFlags: 1, isRemote: true }, attributes };
}
