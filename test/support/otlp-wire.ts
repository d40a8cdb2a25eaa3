/**
 * OTLP trace requests as the tests read them: a small protobuf wire-format reader of
 * ExportTraceServiceRequest (only the fields the tests look at; every other field is skipped, as
 * protobuf readers must) and a reader of OTLP/JSON, both normalised to one span shape.
 *
 * Field numbers are those of opentelemetry-proto (opentelemetry/proto/collector/trace/v1,
 * trace/v1/trace.proto, common/v1/common.proto, resource/v1/resource.proto):
 *   ExportTraceServiceRequest 1 resource_spans
 *   ResourceSpans 1 resource (Resource: 1 attributes), 2 scope_spans
 *   ScopeSpans 1 scope (InstrumentationScope: 1 name, 2 version), 2 spans
 *   Span 1 trace_id, 2 span_id, 3 trace_state, 4 parent_span_id, 5 name, 6 kind, 7 start (fixed64),
 *        8 end (fixed64), 9 attributes, 11 events, 13 links, 15 status (2 message, 3 code)
 *   Event 1 time (fixed64), 2 name, 3 attributes; Link 1 trace_id, 2 span_id, 3 trace_state, 4 attributes
 *   KeyValue 1 key, 2 value; AnyValue 1 string, 2 bool, 3 int, 4 double, 5 array (1 values),
 *        6 kvlist (1 values), 7 bytes
 */

export type AttributeValue = string | number | boolean | Uint8Array | null | AttributeValue[] | { [key: string]: AttributeValue };
export type Attributes = Record<string, AttributeValue>;

/** OTLP's SpanKind numbers (the API's SpanKind + 1). */
export const OTLP_KIND = { UNSPECIFIED: 0, INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;
/** OTLP's status codes. */
export const OTLP_STATUS = { UNSET: 0, OK: 1, ERROR: 2 } as const;

export interface ReceivedEvent {
  timeNs: bigint;
  name: string;
  attributes: Attributes;
}

export interface ReceivedLink {
  traceId: string;
  spanId: string;
  traceState: string | undefined;
  attributes: Attributes;
}

/** One span, whichever encoding carried it. Ids are lowercase hex; a root span has no parentSpanId. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  traceState: string | undefined;
  name: string;
  /** OTLP_KIND. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Attributes;
  events: ReceivedEvent[];
  links: ReceivedLink[];
  status: { code: number; message: string | undefined };
  /** The resource's service.name. */
  serviceName: string | undefined;
  resource: Attributes;
  scope: { name: string; version: string | undefined };
  protocol: 'protobuf' | 'json';
}

// ------------------------------------------------------------------ protobuf wire format

/** One field of a message: wire type 0 (varint, as bigint), 1 (8 bytes), 2 (the bytes), 5 (4 bytes). */
interface Field {
  number: number;
  wire: 0 | 1 | 2 | 5;
  varint: bigint;
  bytes: Uint8Array;
}

export class WireError extends Error {}

/** The fields of one message, in order. Linear in its length; a truncated or malformed message throws WireError. */
export function readFields(buffer: Uint8Array): Field[] {
  const fields: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (pos >= buffer.length) throw new WireError('truncated varint');
      const byte = buffer[pos++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return BigInt.asUintN(64, value);
    }
    throw new WireError('varint longer than 10 bytes');
  };
  const take = (length: number): Uint8Array => {
    if (length < 0 || pos + length > buffer.length) throw new WireError(`field of ${length} bytes past the end of the message`);
    const bytes = buffer.subarray(pos, pos + length);
    pos += length;
    return bytes;
  };
  while (pos < buffer.length) {
    const tag = varint();
    const number = Number(tag >> 3n);
    const wire = Number(tag & 7n);
    if (number === 0) throw new WireError('field number 0');
    if (wire === 0) fields.push({ number, wire: 0, varint: varint(), bytes: EMPTY });
    else if (wire === 1) fields.push({ number, wire: 1, varint: 0n, bytes: take(8) });
    else if (wire === 2) fields.push({ number, wire: 2, varint: 0n, bytes: take(Number(varint())) });
    else if (wire === 5) fields.push({ number, wire: 5, varint: 0n, bytes: take(4) });
    else throw new WireError(`wire type ${wire} (groups are not used by OTLP)`);
  }
  return fields;
}

const EMPTY = new Uint8Array(0);
const utf8 = new TextDecoder('utf-8', { fatal: true });

const view = (bytes: Uint8Array): DataView => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
const fixed64 = (field: Field): bigint => view(field.bytes).getBigUint64(0, true);
const double = (field: Field): number => view(field.bytes).getFloat64(0, true);
const text = (field: Field): string => utf8.decode(field.bytes);
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** A varint int64 as a number when exact, else its decimal string (never silently rounded). */
function int64(value: bigint): number | string {
  const signed = BigInt.asIntN(64, value);
  return signed >= BigInt(Number.MIN_SAFE_INTEGER) && signed <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(signed) : signed.toString();
}

function anyValue(bytes: Uint8Array): AttributeValue {
  let value: AttributeValue = null;
  for (const field of readFields(bytes)) {
    if (field.number === 1 && field.wire === 2) value = text(field);
    else if (field.number === 2 && field.wire === 0) value = field.varint !== 0n;
    else if (field.number === 3 && field.wire === 0) value = int64(field.varint);
    else if (field.number === 4 && field.wire === 1) value = double(field);
    else if (field.number === 5 && field.wire === 2) value = readFields(field.bytes).filter((f) => f.number === 1 && f.wire === 2).map((f) => anyValue(f.bytes));
    else if (field.number === 6 && field.wire === 2) value = keyValues(readFields(field.bytes).filter((f) => f.number === 1 && f.wire === 2));
    else if (field.number === 7 && field.wire === 2) value = Uint8Array.from(field.bytes);
  }
  return value;
}

/** Repeated KeyValue fields as one record. */
function keyValues(fields: Field[]): Attributes {
  const attributes: Attributes = {};
  for (const entry of fields) {
    let key = '';
    let value: AttributeValue = null;
    for (const field of readFields(entry.bytes)) {
      if (field.number === 1 && field.wire === 2) key = text(field);
      else if (field.number === 2 && field.wire === 2) value = anyValue(field.bytes);
    }
    attributes[key] = value;
  }
  return attributes;
}

const only = (fields: Field[], number: number, wire: Field['wire'] = 2): Field[] => fields.filter((f) => f.number === number && f.wire === wire);

function protobufEvent(bytes: Uint8Array): ReceivedEvent {
  const fields = readFields(bytes);
  const time = only(fields, 1, 1)[0];
  const name = only(fields, 2)[0];
  return { timeNs: time ? fixed64(time) : 0n, name: name ? text(name) : '', attributes: keyValues(only(fields, 3)) };
}

function protobufLink(bytes: Uint8Array): ReceivedLink {
  const fields = readFields(bytes);
  const state = only(fields, 3)[0];
  return { traceId: hex(only(fields, 1)[0]?.bytes ?? EMPTY), spanId: hex(only(fields, 2)[0]?.bytes ?? EMPTY), traceState: state && state.bytes.length > 0 ? text(state) : undefined, attributes: keyValues(only(fields, 4)) };
}

function protobufStatus(bytes: Uint8Array | undefined): ReceivedSpan['status'] {
  if (!bytes) return { code: OTLP_STATUS.UNSET, message: undefined };
  const fields = readFields(bytes);
  const message = only(fields, 2)[0];
  const code = only(fields, 3, 0)[0];
  return { code: code ? Number(code.varint) : OTLP_STATUS.UNSET, message: message && message.bytes.length > 0 ? text(message) : undefined };
}

type SpanContextOf = Pick<ReceivedSpan, 'serviceName' | 'resource' | 'scope' | 'protocol'>;

function protobufSpan(bytes: Uint8Array, context: SpanContextOf): ReceivedSpan {
  const fields = readFields(bytes);
  const first = (number: number, wire: Field['wire'] = 2): Field | undefined => only(fields, number, wire)[0];
  const parent = first(4);
  const state = first(3);
  const start = first(7, 1);
  const end = first(8, 1);
  return {
    traceId: hex(first(1)?.bytes ?? EMPTY),
    spanId: hex(first(2)?.bytes ?? EMPTY),
    parentSpanId: parent && parent.bytes.length > 0 ? hex(parent.bytes) : undefined,
    traceState: state && state.bytes.length > 0 ? text(state) : undefined,
    name: first(5) ? text(first(5)!) : '',
    kind: Number(first(6, 0)?.varint ?? 0n),
    startNs: start ? fixed64(start) : 0n,
    endNs: end ? fixed64(end) : 0n,
    attributes: keyValues(only(fields, 9)),
    events: only(fields, 11).map((f) => protobufEvent(f.bytes)),
    links: only(fields, 13).map((f) => protobufLink(f.bytes)),
    status: protobufStatus(first(15)?.bytes),
    ...context,
  };
}

/** The spans of a binary ExportTraceServiceRequest (application/x-protobuf). */
export function decodeProtobufRequest(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of only(readFields(body), 1)) {
    const fields = readFields(resourceSpans.bytes);
    const resourceBytes = only(fields, 1)[0]?.bytes;
    const resource = resourceBytes ? keyValues(only(readFields(resourceBytes), 1)) : {};
    const serviceName = typeof resource['service.name'] === 'string' ? resource['service.name'] : undefined;
    for (const scopeSpans of only(fields, 2)) {
      const scopeFields = readFields(scopeSpans.bytes);
      const scopeBytes = only(scopeFields, 1)[0]?.bytes;
      const scopeOf = scopeBytes ? readFields(scopeBytes) : [];
      const scopeName = only(scopeOf, 1)[0];
      const scopeVersion = only(scopeOf, 2)[0];
      const scope = { name: scopeName ? text(scopeName) : '', version: scopeVersion && scopeVersion.bytes.length > 0 ? text(scopeVersion) : undefined };
      for (const span of only(scopeFields, 2)) spans.push(protobufSpan(span.bytes, { serviceName, resource, scope, protocol: 'protobuf' }));
    }
  }
  return spans;
}

// ------------------------------------------------------------------ OTLP/JSON

type Json = Record<string, unknown>;

/** A field by its lowerCamelCase name or its proto name (OTLP/JSON receivers accept both). */
function pick(object: unknown, camel: string, snake?: string): unknown {
  if (object === null || typeof object !== 'object') return undefined;
  const record = object as Json;
  return record[camel] ?? (snake ? record[snake] : undefined);
}

const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** OTLP/JSON ids are hex (not base64 as plain proto3 JSON would have them). */
function jsonId(value: unknown, what: string): string {
  if (value === undefined || value === null || value === '') return '';
  if (typeof value !== 'string' || !/^[0-9a-fA-F]*$/.test(value) || value.length % 2 !== 0) throw new WireError(`${what} is not a hex id: ${JSON.stringify(value)}`);
  return value.toLowerCase();
}

function jsonNanos(value: unknown): bigint {
  if (typeof value === 'string' && /^\d+$/.test(value)) return BigInt(value);
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return BigInt(value);
  if (value === undefined) return 0n;
  throw new WireError(`not a unix-nano time: ${JSON.stringify(value)}`);
}

function jsonAnyValue(value: unknown): AttributeValue {
  if (value === null || typeof value !== 'object') return null;
  const v = value as Json;
  if ('stringValue' in v || 'string_value' in v) return String(pick(v, 'stringValue', 'string_value'));
  if ('boolValue' in v || 'bool_value' in v) return pick(v, 'boolValue', 'bool_value') === true;
  if ('intValue' in v || 'int_value' in v) return int64(BigInt(pick(v, 'intValue', 'int_value') as string | number));
  if ('doubleValue' in v || 'double_value' in v) return Number(pick(v, 'doubleValue', 'double_value'));
  if ('arrayValue' in v || 'array_value' in v) return list(pick(pick(v, 'arrayValue', 'array_value'), 'values')).map(jsonAnyValue);
  if ('kvlistValue' in v || 'kvlist_value' in v) return jsonAttributes(pick(pick(v, 'kvlistValue', 'kvlist_value'), 'values'));
  if ('bytesValue' in v || 'bytes_value' in v) return Uint8Array.from(Buffer.from(String(pick(v, 'bytesValue', 'bytes_value')), 'base64'));
  return null;
}

function jsonAttributes(value: unknown): Attributes {
  const attributes: Attributes = {};
  for (const entry of list(value)) attributes[String(pick(entry, 'key'))] = jsonAnyValue(pick(entry, 'value'));
  return attributes;
}

const KIND_NAMES: Record<string, number> = { SPAN_KIND_UNSPECIFIED: 0, SPAN_KIND_INTERNAL: 1, SPAN_KIND_SERVER: 2, SPAN_KIND_CLIENT: 3, SPAN_KIND_PRODUCER: 4, SPAN_KIND_CONSUMER: 5 };
const STATUS_NAMES: Record<string, number> = { STATUS_CODE_UNSET: 0, STATUS_CODE_OK: 1, STATUS_CODE_ERROR: 2 };
const enumValue = (value: unknown, names: Record<string, number>): number => (typeof value === 'number' ? value : typeof value === 'string' ? (names[value] ?? Number(value)) : 0);
const optionalText = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

function jsonSpan(span: unknown, context: SpanContextOf): ReceivedSpan {
  const parentSpanId = jsonId(pick(span, 'parentSpanId', 'parent_span_id'), 'parentSpanId');
  const status = pick(span, 'status');
  return {
    traceId: jsonId(pick(span, 'traceId', 'trace_id'), 'traceId'),
    spanId: jsonId(pick(span, 'spanId', 'span_id'), 'spanId'),
    parentSpanId: parentSpanId === '' ? undefined : parentSpanId,
    traceState: optionalText(pick(span, 'traceState', 'trace_state')),
    name: String(pick(span, 'name') ?? ''),
    kind: enumValue(pick(span, 'kind'), KIND_NAMES),
    startNs: jsonNanos(pick(span, 'startTimeUnixNano', 'start_time_unix_nano')),
    endNs: jsonNanos(pick(span, 'endTimeUnixNano', 'end_time_unix_nano')),
    attributes: jsonAttributes(pick(span, 'attributes')),
    events: list(pick(span, 'events')).map((event) => ({ timeNs: jsonNanos(pick(event, 'timeUnixNano', 'time_unix_nano')), name: String(pick(event, 'name') ?? ''), attributes: jsonAttributes(pick(event, 'attributes')) })),
    links: list(pick(span, 'links')).map((link) => ({
      traceId: jsonId(pick(link, 'traceId', 'trace_id'), 'links[].traceId'),
      spanId: jsonId(pick(link, 'spanId', 'span_id'), 'links[].spanId'),
      traceState: optionalText(pick(link, 'traceState', 'trace_state')),
      attributes: jsonAttributes(pick(link, 'attributes')),
    })),
    status: { code: enumValue(pick(status, 'code'), STATUS_NAMES), message: optionalText(pick(status, 'message')) },
    ...context,
  };
}

/**
 * The spans of an OTLP/JSON trace document: an ExportTraceServiceRequest as an exporter posts it,
 * or the `otlp` object of GET /sessions/{id}/traces (the same `resourceSpans` shape).
 */
export function decodeJsonRequest(document: unknown): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of list(pick(document, 'resourceSpans', 'resource_spans'))) {
    const resource = jsonAttributes(pick(pick(resourceSpans, 'resource'), 'attributes'));
    const serviceName = typeof resource['service.name'] === 'string' ? resource['service.name'] : undefined;
    for (const scopeSpans of list(pick(resourceSpans, 'scopeSpans', 'scope_spans'))) {
      const scopeOf = pick(scopeSpans, 'scope');
      const scope = { name: String(pick(scopeOf, 'name') ?? ''), version: optionalText(pick(scopeOf, 'version')) };
      for (const span of list(pick(scopeSpans, 'spans'))) spans.push(jsonSpan(span, { serviceName, resource, scope, protocol: 'json' }));
    }
  }
  return spans;
}
