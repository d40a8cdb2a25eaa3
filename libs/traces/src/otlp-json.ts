import { isUuid } from '#libs/database';
import { SESSION_ATTRIBUTE, TURN_ATTRIBUTE } from '#libs/telemetry';

// The OTLP/HTTP JSON encoding of spans (opentelemetry-proto's JSON mapping, as
// `@opentelemetry/otlp-transformer`'s JsonTraceSerializer writes it): ids as lowercase hex, times as
// unix nanoseconds in strings, attribute values as AnyValue objects. The span store keeps each span
// in this form (one row a span) and the traces route regroups the rows of a trace into an
// ExportTraceServiceRequest, so what an integrator reads is what a collector would have received.

/** An OTLP AnyValue (exactly one field set). */
export interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  bytesValue?: string;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
}

export interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  startTimeUnixNano: string;
  endTimeUnixNano?: string;
  attributes?: OtlpKeyValue[];
  droppedAttributesCount?: number;
  events?: { name: string; timeUnixNano?: string; attributes?: OtlpKeyValue[]; droppedAttributesCount?: number }[];
  droppedEventsCount?: number;
  links?: { traceId: string; spanId: string; attributes?: OtlpKeyValue[]; droppedAttributesCount?: number }[];
  droppedLinksCount?: number;
  [field: string]: unknown;
}

/** An instrumentation scope `{name, version}` or a resource `{attributes}`: kept as the serializer wrote them. */
export type OtlpObject = Record<string, unknown>;

export interface OtlpScopeSpans {
  scope?: OtlpObject;
  spans?: OtlpSpan[];
  schemaUrl?: string;
}

export interface OtlpResourceSpans {
  resource?: OtlpObject;
  scopeSpans?: OtlpScopeSpans[];
  schemaUrl?: string;
}

/** An OTLP ExportTraceServiceRequest in its JSON encoding. */
export interface OtlpTraceRequest {
  resourceSpans: OtlpResourceSpans[];
}

/** One row of `session_spans`: a span of a session with the resource and scope it was made under. */
export interface StoredSpan {
  sessionId: string;
  traceId: string;
  spanId: string;
  /** The turn the span is of (its `yuxi.turn_id`); null for a span made before any turn (the api's request and `accept_input`). */
  turnId: string | null;
  /** The span's parent (hex), null for a root: a turn's entry takes the parents of its inputs' `accept_input` spans (the request, the automation's fire). */
  parentSpanId: string | null;
  /** The input an `accept_input` span accepted (its `yuxi.input_id`), else null: a turn's entry takes the acceptance spans of its inputs. */
  inputId: string | null;
  span: OtlpSpan;
  resource: OtlpObject;
  scope: OtlpObject;
  startAt: Date;
}

/**
 * A stored span's JSON is at most this long (UTF-8 bytes). The SDK's span limits (attribute count
 * and value length, event and link counts) already bound a span; this cap is the store's own,
 * for spans whose captured content (gen_ai.input.messages …) makes them large.
 */
export const MAX_SPAN_BYTES = 64 * 1024;
/** Set (true) on a span whose events, attributes or links the store dropped to keep it under MAX_SPAN_BYTES. */
export const TRUNCATED_ATTRIBUTE = 'yuxi.truncated';

/** The input an `accept_input` span accepted. */
export const INPUT_ATTRIBUTE = 'yuxi.input_id';

const TRACE_ID = /^[0-9a-f]{32}$/;
const SPAN_ID = /^[0-9a-f]{16}$/;
const NANOS = /^\d{1,20}$/;

/**
 * The rows to store from one exported batch (the serializer's request): every span that names a
 * session (a UUID in `yuxi.session_id`) and has well-formed ids and start time; others are skipped.
 * A span's `yuxi.turn_id`, when a UUID, says which turn's entry of the trace it belongs to; a span
 * of no turn is in the entries of the turns whose inputs it accepted (`yuxi.input_id`) or whose
 * acceptance it is the parent of (`parentSpanId`). Each span is made storable (no U+0000, no half
 * surrogate) and capped at `maxSpanBytes` (capSpan).
 */
export function storedSpansOf(request: OtlpTraceRequest, maxSpanBytes = MAX_SPAN_BYTES): StoredSpan[] {
  const rows: StoredSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = resourceSpans.resource ?? {};
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      const scope = scopeSpans.scope ?? {};
      for (const span of scopeSpans.spans ?? []) {
        const sessionId = stringAttribute(span.attributes, SESSION_ATTRIBUTE)?.toLowerCase();
        if (sessionId === undefined || !isUuid(sessionId)) continue;
        if (!TRACE_ID.test(span.traceId) || !SPAN_ID.test(span.spanId) || !NANOS.test(span.startTimeUnixNano)) continue;
        const turnId = stringAttribute(span.attributes, TURN_ATTRIBUTE)?.toLowerCase();
        const inputId = stringAttribute(span.attributes, INPUT_ATTRIBUTE)?.toLowerCase();
        rows.push({
          sessionId,
          traceId: span.traceId,
          spanId: span.spanId,
          turnId: turnId !== undefined && isUuid(turnId) ? turnId : null,
          parentSpanId: typeof span.parentSpanId === 'string' && SPAN_ID.test(span.parentSpanId) ? span.parentSpanId : null,
          inputId: inputId !== undefined && isUuid(inputId) ? inputId : null,
          span: capSpan(storable(span), maxSpanBytes),
          resource: storable(resource),
          scope: storable(scope),
          startAt: new Date(Number(BigInt(span.startTimeUnixNano) / 1_000_000n)),
        });
      }
    }
  }
  return rows;
}

// In the JSON text: U+0000, or a surrogate half (JSON.stringify escapes only unpaired ones). An
// escaped backslash before `u0000` matches too, at the cost of one needless walk.
const UNSTORABLE_JSON = /\\u0000|\\ud[89a-f]/i;
// eslint-disable-next-line no-control-regex -- U+0000 is what is dropped
const UNSTORABLE_CHARS = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The value as Postgres' jsonb takes it: without U+0000 and with U+FFFD for an unpaired surrogate
 * (jsonb refuses both, and the whole batch, other sessions' spans too, would be dropped). A model's
 * tool name or captured content may hold either. The value itself when it holds neither.
 */
export function storable<T>(value: T): T {
  if (!UNSTORABLE_JSON.test(JSON.stringify(value))) return value;
  return cleaned(value) as T;
}

function cleaned(value: unknown): unknown {
  if (typeof value === 'string') return value.replace(UNSTORABLE_CHARS, (char) => (char === '\u0000' ? '' : '\ufffd'));
  if (Array.isArray(value)) return value.map(cleaned);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [cleaned(key) as string, cleaned(item)]));
  return value;
}

/** The string value of an attribute, if the span has it as a string. */
export function stringAttribute(attributes: OtlpKeyValue[] | undefined, key: string): string | undefined {
  const value = attributes?.find((attribute) => attribute.key === key)?.value?.stringValue;
  return typeof value === 'string' ? value : undefined;
}

/**
 * The span, or a copy of it at most `maxBytes` long as JSON: its events go first (they are the
 * least part of what the waterfall draws), then its links, then its attributes, largest first,
 * keeping the span's identity (ids, name, times, status), `yuxi.session_id` and `yuxi.turn_id`. The counts of what
 * was dropped add to the span's dropped* counts, and `yuxi.truncated` = true says it was cut.
 */
export function capSpan(span: OtlpSpan, maxBytes = MAX_SPAN_BYTES): OtlpSpan {
  if (jsonBytes(span) <= maxBytes) return span;
  const marker: OtlpKeyValue = { key: TRUNCATED_ATTRIBUTE, value: { boolValue: true } };
  const attributes = [...(span.attributes ?? []).filter((attribute) => attribute.key !== TRUNCATED_ATTRIBUTE), marker];
  const cut: OtlpSpan = {
    ...span,
    attributes,
    events: [],
    droppedEventsCount: (span.droppedEventsCount ?? 0) + (span.events?.length ?? 0),
  };
  if (jsonBytes(cut) <= maxBytes) return cut;
  cut.links = [];
  cut.droppedLinksCount = (span.droppedLinksCount ?? 0) + (span.links?.length ?? 0);
  let size = jsonBytes(cut);
  if (size <= maxBytes) return cut;
  // Largest first: the fewest attributes go. The marker and the session's and turn's ids stay.
  const bySize = attributes
    .filter((attribute) => attribute !== marker && attribute.key !== SESSION_ATTRIBUTE && attribute.key !== TURN_ATTRIBUTE)
    .map((attribute) => ({ attribute, bytes: jsonBytes(attribute) + 1 }))
    .sort((a, b) => b.bytes - a.bytes);
  const dropped = new Set<OtlpKeyValue>();
  for (const { attribute, bytes } of bySize) {
    if (size <= maxBytes) break;
    dropped.add(attribute);
    size -= bytes;
  }
  cut.attributes = attributes.filter((attribute) => !dropped.has(attribute));
  cut.droppedAttributesCount = (span.droppedAttributesCount ?? 0) + dropped.size;
  return cut;
}

/** The UTF-8 length of a value's JSON. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** A stored span as the traces route reads it back. */
export interface SpanOfTrace {
  span: OtlpSpan;
  resource: OtlpObject;
  scope: OtlpObject;
}

/**
 * The spans as an ExportTraceServiceRequest: grouped by resource (the process that made them),
 * then by instrumentation scope, each group where its first span is, spans in the given order.
 */
export function groupSpans(spans: readonly SpanOfTrace[]): OtlpTraceRequest {
  const resources = new Map<string, { resource: OtlpObject; scopes: Map<string, { scope: OtlpObject; spans: OtlpSpan[] }> }>();
  for (const { span, resource, scope } of spans) {
    const resourceKey = JSON.stringify(resource);
    let group = resources.get(resourceKey);
    if (!group) resources.set(resourceKey, (group = { resource, scopes: new Map() }));
    const scopeKey = JSON.stringify(scope);
    let scopeGroup = group.scopes.get(scopeKey);
    if (!scopeGroup) group.scopes.set(scopeKey, (scopeGroup = { scope, spans: [] }));
    scopeGroup.spans.push(span);
  }
  return {
    resourceSpans: [...resources.values()].map(({ resource, scopes }) => ({
      resource,
      scopeSpans: [...scopes.values()].map(({ scope, spans: scoped }) => ({ scope, spans: scoped })),
    })),
  };
}
