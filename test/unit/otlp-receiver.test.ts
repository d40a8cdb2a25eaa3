import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROOT_CONTEXT, type SpanContext, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { JsonTraceSerializer, ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { decodeJsonRequest, decodeProtobufRequest, OTLP_KIND, OTLP_STATUS, readFields, type ReceivedSpan, WireError } from '../support/otlp-wire.js';

// The e2e and fault tests read the spans the processes export with test/support/otlp-wire.ts, a
// hand-written reader: here it reads back what OpenTelemetry's own serializers write (the
// exporters' encoders, @opentelemetry/otlp-transformer) from real SDK spans, with no network.

const CLIENT_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN_ID = '00f067aa0ba902b7';
const LINKED_SPAN_ID = 'a1b2c3d4e5f60718';

/** Spans of a small trace: a SERVER root under a remote parent (with tracestate), a CLIENT child with every attribute type, an event, a link and an error. */
function makeSpans(): ReadableSpan[] {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'unit-service', 'service.namespace': 'yuxi' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('unit-scope', '1.2.3');
  const remote: SpanContext = { traceId: CLIENT_TRACE_ID, spanId: CLIENT_SPAN_ID, traceFlags: TraceFlags.SAMPLED, isRemote: true, traceState: new TraceState('vendor=opaque') };
  const server = tracer.startSpan('POST /api/v1/agents/sessions/:session_id/events', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'POST', 'http.response.status_code': 202 } }, trace.setSpanContext(ROOT_CONTEXT, remote));
  const chat = tracer.startSpan(
    'chat m-1',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.usage.input_tokens': 1234,
        'yuxi.negative': -5,
        'yuxi.large': 2 ** 40,
        'yuxi.ratio': 0.25,
        'yuxi.flag': true,
        'gen_ai.response.finish_reasons': ['stop', 'tool_calls'],
        'yuxi.numbers': [1, 2.5],
      },
      links: [{ context: { traceId: CLIENT_TRACE_ID, spanId: LINKED_SPAN_ID, traceFlags: TraceFlags.SAMPLED, isRemote: true }, attributes: { 'yuxi.link.reason': 'takeover' } }],
    },
    trace.setSpan(ROOT_CONTEXT, server),
  );
  chat.addEvent('yuxi.turn.waiting', { 'yuxi.waitpoint.kind': 'approval' });
  chat.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream failed' });
  chat.end();
  server.end();
  return exporter.getFinishedSpans();
}

const nanos = ([seconds, ns]: [number, number]): bigint => BigInt(seconds) * 1_000_000_000n + BigInt(ns);

/** The decoded spans match the SDK's, field by field. */
function assertSameSpans(decoded: ReceivedSpan[], original: ReadableSpan[], protocol: 'protobuf' | 'json'): void {
  assert.equal(decoded.length, original.length);
  for (const span of original) {
    const got = decoded.find((d) => d.spanId === span.spanContext().spanId);
    assert.ok(got, `span ${span.name} decoded`);
    assert.equal(got.protocol, protocol);
    assert.equal(got.traceId, span.spanContext().traceId);
    assert.equal(got.parentSpanId, span.parentSpanContext?.spanId);
    assert.equal(got.traceState, span.spanContext().traceState?.serialize() || undefined);
    assert.equal(got.name, span.name);
    assert.equal(got.kind, span.kind + 1, 'OTLP kinds are the API kinds + 1');
    assert.equal(got.startNs, nanos(span.startTime));
    assert.equal(got.endNs, nanos(span.endTime));
    assert.equal(got.serviceName, 'unit-service');
    assert.equal(got.resource['service.namespace'], 'yuxi');
    assert.deepEqual(got.scope, { name: 'unit-scope', version: '1.2.3' });
    assert.deepEqual(got.attributes, { ...span.attributes });
    assert.deepEqual(
      got.events.map((e) => [e.name, e.timeNs, e.attributes]),
      span.events.map((e) => [e.name, nanos(e.time), { ...e.attributes }]),
    );
    assert.deepEqual(
      got.links.map((l) => [l.traceId, l.spanId, l.attributes]),
      span.links.map((l) => [l.context.traceId, l.context.spanId, { ...l.attributes }]),
    );
    assert.deepEqual(got.status, { code: span.status.code, message: span.status.message });
  }
}

describe('OTLP receiver wire reader', () => {
  it('reads an ExportTraceServiceRequest written by the protobuf exporter’s serializer', () => {
    const spans = makeSpans();
    const body = ProtobufTraceSerializer.serializeRequest(spans);
    assert.ok(body && body.length > 0);
    const decoded = decodeProtobufRequest(body);
    assertSameSpans(decoded, spans, 'protobuf');
    const server = decoded.find((s) => s.kind === OTLP_KIND.SERVER)!;
    const chat = decoded.find((s) => s.kind === OTLP_KIND.CLIENT)!;
    // The values themselves, not only "as the SDK had them".
    assert.equal(server.traceId, CLIENT_TRACE_ID);
    assert.equal(server.parentSpanId, CLIENT_SPAN_ID);
    assert.equal(server.traceState, 'vendor=opaque');
    assert.equal(chat.parentSpanId, server.spanId);
    assert.equal(chat.attributes['yuxi.negative'], -5, 'a negative int64 (a ten-byte varint)');
    assert.equal(chat.attributes['yuxi.large'], 2 ** 40);
    assert.equal(chat.attributes['yuxi.ratio'], 0.25, 'a double (fixed64)');
    assert.deepEqual(chat.attributes['gen_ai.response.finish_reasons'], ['stop', 'tool_calls']);
    assert.deepEqual(chat.links.map((l) => [l.spanId, l.attributes['yuxi.link.reason']]), [[LINKED_SPAN_ID, 'takeover']]);
    assert.deepEqual(chat.status, { code: OTLP_STATUS.ERROR, message: 'upstream failed' });
    assert.deepEqual(server.status, { code: OTLP_STATUS.UNSET, message: undefined });
  });

  it('reads the same request written by the JSON exporter’s serializer (hex ids, string times)', () => {
    const spans = makeSpans();
    const body = JsonTraceSerializer.serializeRequest(spans);
    assert.ok(body);
    const document = JSON.parse(new TextDecoder().decode(body)) as unknown;
    assertSameSpans(decodeJsonRequest(document), spans, 'json');
  });

  it('skips fields it does not know, and refuses a truncated message or a group', () => {
    // Span { 5: "x", 99: varint 7, 1: 16 bytes } inside ScopeSpans.2 inside ResourceSpans.2 inside request.1.
    const traceId = Buffer.from(CLIENT_TRACE_ID, 'hex');
    const span = Buffer.concat([Buffer.from([0x2a, 1, 0x78]), Buffer.from([0x98, 0x06, 7]), Buffer.from([0x0a, 16]), traceId]);
    const wrap = (tag: number, inner: Buffer): Buffer => Buffer.concat([Buffer.from([tag, inner.length]), inner]);
    const request = wrap(0x0a, wrap(0x12, wrap(0x12, span)));
    const [decoded] = decodeProtobufRequest(request);
    assert.equal(decoded?.name, 'x');
    assert.equal(decoded?.traceId, CLIENT_TRACE_ID);
    assert.equal(decoded?.parentSpanId, undefined);
    assert.equal(decoded?.serviceName, undefined);
    assert.throws(() => readFields(request.subarray(0, request.length - 3)), WireError);
    assert.throws(() => readFields(Buffer.from([0x0b])), WireError, 'wire type 3 (start group)');
    assert.throws(() => readFields(Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])), WireError, 'an 11-byte varint');
  });

  it('reads OTLP/JSON with proto field names and enum names too, and refuses ids that are not hex', () => {
    const document = {
      resource_spans: [
        {
          resource: { attributes: [{ key: 'service.name', value: { string_value: 'svc' } }] },
          scope_spans: [{ scope: { name: 's' }, spans: [{ trace_id: CLIENT_TRACE_ID, span_id: CLIENT_SPAN_ID, name: 'n', kind: 'SPAN_KIND_SERVER', start_time_unix_nano: '5', end_time_unix_nano: 6, attributes: [{ key: 'n', value: { int_value: '42' } }], status: { code: 'STATUS_CODE_ERROR' } }] }],
        },
      ],
    };
    const [span] = decodeJsonRequest(document);
    assert.deepEqual([span?.serviceName, span?.kind, span?.startNs, span?.endNs, span?.attributes.n, span?.status.code], ['svc', OTLP_KIND.SERVER, 5n, 6n, 42, OTLP_STATUS.ERROR]);
    assert.throws(() => decodeJsonRequest({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'S/kvNXezTaajzpKdDg5HNg==', spanId: CLIENT_SPAN_ID }] }] }] }), WireError);
  });
});
