/**
 * A session's traces (`GET /api/v1/agents/sessions/{session_id}/traces`): one entry per turn whose
 * spans were kept, each as OTLP JSON (the OpenTelemetry protocol's JSON encoding: ids in hex, times
 * in unix nanoseconds as strings, 64-bit integers as strings or numbers). Written by hand after the
 * OTLP JSON encoding and the upstream `sessions.traces.list`, so that a reader of any OTLP producer
 * fits (kinds and status codes as numbers or as their enum names).
 */

/** An attribute's value: exactly one of these is set. */
export interface OtlpAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number | string;
  arrayValue?: { values?: OtlpAnyValue[] };
  kvlistValue?: { values?: OtlpKeyValue[] };
  bytesValue?: string;
}

export interface OtlpKeyValue {
  key: string;
  value?: OtlpAnyValue;
}

export interface OtlpSpanEvent {
  name: string;
  timeUnixNano: string;
  attributes?: OtlpKeyValue[];
}

export interface OtlpSpanLink {
  traceId: string;
  spanId: string;
  attributes?: OtlpKeyValue[];
}

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  /** Absent or empty on a root span. */
  parentSpanId?: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer (or `SPAN_KIND_…`). */
  kind?: number | string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes?: OtlpKeyValue[];
  events?: OtlpSpanEvent[];
  links?: OtlpSpanLink[];
  /** code: 0 unset, 1 ok, 2 error (or `STATUS_CODE_…`). */
  status?: { code?: number | string; message?: string };
}

export interface OtlpScopeSpans {
  scope?: { name?: string; version?: string };
  spans?: OtlpSpan[];
}

export interface OtlpResourceSpans {
  resource?: { attributes?: OtlpKeyValue[] };
  scopeSpans?: OtlpScopeSpans[];
}

/** A trace as OTLP JSON: its spans grouped by the resource (process) and the scope that made them. */
export interface OtlpTraceData {
  resourceSpans: OtlpResourceSpans[];
}
