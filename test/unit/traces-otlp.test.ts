import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { capSpan, groupSpans, MAX_SPAN_BYTES, type OtlpSpan, type OtlpTraceRequest, storable, storedSpansOf } from '#libs/traces';

// The span store's encoding (libs/traces/src/otlp-json.ts), no database: SDK spans through the
// OTLP/HTTP JSON serializer into rows (hex ids, unix-nano strings, AnyValue attributes), the cap on
// a row's size, and the rows of a trace grouped back into resourceSpans / scopeSpans.

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const OTHER_SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb1';
const TURN = '01a22bfa-8bdf-7435-8da3-a93fcf70dbc2';

function recordSpans(): ReturnType<InMemorySpanExporter['getFinishedSpans']> {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ 'service.name': 'yuxi-worker' }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer('yuxi-agents-sessions', '1.2.3');
  const parent = tracer.startSpan('invoke_agent helper', { attributes: { 'yuxi.session_id': SESSION, 'gen_ai.operation.name': 'invoke_agent', 'yuxi.run.epoch': 2, 'yuxi.run.takeover': true }, startTime: new Date('2026-01-02T03:04:05.678Z') });
  parent.addEvent('yuxi.turn.waiting', { 'yuxi.waitpoint.kind': 'approval' });
  const linked = { traceId: parent.spanContext().traceId, spanId: 'abcdefabcdefabcd', traceFlags: 1 };
  const chat = tracer.startSpan('chat gpt-5', { attributes: { 'yuxi.session_id': SESSION, 'yuxi.turn_id': TURN.toUpperCase(), 'gen_ai.response.finish_reasons': ['stop'] }, links: [{ context: linked, attributes: { 'yuxi.link.reason': 'takeover' } }] });
  chat.end();
  tracer.startSpan('GET /health').end();
  tracer.startSpan('accept_input', { attributes: { 'yuxi.session_id': 'not-a-session' } }).end();
  tracer.startSpan('webhook.deliver', { attributes: { 'yuxi.session_id': OTHER_SESSION, 'yuxi.turn_id': 'not-a-turn' } }).end();
  parent.end(new Date('2026-01-02T03:04:06.000Z'));
  return exporter.getFinishedSpans();
}

function serialized(): OtlpTraceRequest {
  return JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(recordSpans())!).toString('utf8')) as OtlpTraceRequest;
}

describe('span → OTLP JSON row (storedSpansOf over the JSON serializer)', () => {
  it('keeps the spans that name a session (a UUID), with hex ids, unix-nano string times and AnyValue attributes', () => {
    const rows = storedSpansOf(serialized());
    assert.deepEqual(rows.map((row) => [row.sessionId, row.span.name, row.turnId]), [
      [SESSION, 'chat gpt-5', TURN],
      [OTHER_SESSION, 'webhook.deliver', null],
      [SESSION, 'invoke_agent helper', null],
    ], 'the turn of a span is its yuxi.turn_id when a UUID (lowercased), else none');
    const agent = rows[2]!;
    assert.match(agent.traceId, /^[0-9a-f]{32}$/);
    assert.match(agent.spanId, /^[0-9a-f]{16}$/);
    assert.equal(agent.span.traceId, agent.traceId);
    assert.equal(agent.span.startTimeUnixNano, '1767323045678000000');
    assert.equal(agent.span.endTimeUnixNano, '1767323046000000000');
    assert.equal(agent.startAt.toISOString(), '2026-01-02T03:04:05.678Z');
    const attribute = (span: OtlpSpan, key: string) => span.attributes?.find((a) => a.key === key)?.value;
    assert.deepEqual(attribute(agent.span, 'gen_ai.operation.name'), { stringValue: 'invoke_agent' });
    assert.deepEqual(attribute(agent.span, 'yuxi.run.epoch'), { intValue: 2 });
    assert.deepEqual(attribute(agent.span, 'yuxi.run.takeover'), { boolValue: true });
    assert.equal(agent.span.events?.[0]?.name, 'yuxi.turn.waiting');
    assert.match(agent.span.events?.[0]?.timeUnixNano ?? '', /^\d+$/);
    const chat = rows[0]!;
    assert.deepEqual(attribute(chat.span, 'gen_ai.response.finish_reasons'), { arrayValue: { values: [{ stringValue: 'stop' }] } });
    assert.equal(chat.span.parentSpanId, undefined);
    assert.deepEqual(chat.span.links?.map((link) => [link.traceId, link.spanId]), [[agent.traceId, 'abcdefabcdefabcd']]);
    assert.deepEqual(chat.resource.attributes, [{ key: 'service.name', value: { stringValue: 'yuxi-worker' } }]);
    assert.deepEqual([chat.scope.name, chat.scope.version], ['yuxi-agents-sessions', '1.2.3']);
  });

  it('skips a span with malformed ids or start time', () => {
    const request = serialized();
    const spans = request.resourceSpans[0]!.scopeSpans![0]!.spans!;
    spans.find((span) => span.name === 'chat gpt-5')!.spanId = 'XYZ';
    spans.find((span) => span.name === 'webhook.deliver')!.startTimeUnixNano = '-1';
    assert.deepEqual(storedSpansOf(request).map((row) => row.span.name), ['invoke_agent helper']);
  });
});

describe('what a row says of its span beyond its turn (storedSpansOf)', () => {
  const INPUT = '01a22bfa-8bdf-7435-8da3-a93fcf70dbd3';
  const span = (name: string, attributes: OtlpSpan['attributes'], parentSpanId?: string): OtlpSpan => ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name, startTimeUnixNano: '1', attributes: [{ key: 'yuxi.session_id', value: { stringValue: SESSION } }, ...(attributes ?? [])], ...(parentSpanId === undefined ? {} : { parentSpanId }) });
  const rows = (...spans: OtlpSpan[]) => storedSpansOf({ resourceSpans: [{ resource: {}, scopeSpans: [{ scope: {}, spans }] }] });

  it('keeps the parent span id and an accept_input span\'s yuxi.input_id (a UUID), for the entries of the turns that consumed the input', () => {
    const [accept] = rows(span('accept_input', [{ key: 'yuxi.input_id', value: { stringValue: INPUT.toUpperCase() } }], 'c'.repeat(16)));
    assert.deepEqual([accept!.parentSpanId, accept!.inputId, accept!.turnId], ['c'.repeat(16), INPUT, null]);
    const [root] = rows(span('POST /x', [{ key: 'yuxi.input_id', value: { stringValue: 'nope' } }], ''));
    assert.deepEqual([root!.parentSpanId, root!.inputId], [null, null]);
  });

  it('drops U+0000 and replaces a surrogate half (Postgres\' jsonb refuses both, and would drop the whole batch); a clean span is kept as it is', () => {
    const [row] = rows(span('execute_tool a\u0000b', [{ key: 'gen_ai.tool.name', value: { stringValue: 'a\u0000b\ud800' } }, { key: 'ok', value: { stringValue: 'x\ud83d\ude00' } }]));
    assert.equal(row!.span.name, 'execute_tool ab');
    assert.deepEqual(row!.span.attributes!.slice(1).map((a) => a.value?.stringValue), ['ab\ufffd', 'x\ud83d\ude00']);
    assert.ok(!JSON.stringify(row!.span).includes('\\u0000'));
    const clean = span('chat', []);
    assert.equal(storable(clean), clean);
  });
});

describe('the cap on a stored span (capSpan)', () => {
  const base: OtlpSpan = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name: 'chat m', startTimeUnixNano: '1', attributes: [{ key: 'yuxi.session_id', value: { stringValue: SESSION } }] };

  it('leaves a span under the cap as it is', () => {
    assert.equal(capSpan(base), base);
  });

  it('drops the events first, and says so', () => {
    const span: OtlpSpan = { ...base, events: [{ name: 'big', attributes: [{ key: 'x', value: { stringValue: 'x'.repeat(MAX_SPAN_BYTES) } }] }] };
    const cut = capSpan(span);
    assert.deepEqual(cut.events, []);
    assert.equal(cut.droppedEventsCount, 1);
    assert.deepEqual(cut.attributes?.at(-1), { key: 'yuxi.truncated', value: { boolValue: true } });
    assert.ok(Buffer.byteLength(JSON.stringify(cut)) <= MAX_SPAN_BYTES);
  });

  it('then the largest attributes, keeping the session, the small ones and the span\'s identity', () => {
    const span: OtlpSpan = {
      ...base,
      attributes: [...base.attributes!, { key: 'gen_ai.input.messages', value: { stringValue: 'é'.repeat(40_000) } }, { key: 'gen_ai.output.messages', value: { stringValue: 'o'.repeat(30_000) } }, { key: 'gen_ai.request.model', value: { stringValue: 'm' } }],
      droppedAttributesCount: 1,
    };
    const cut = capSpan(span, 40_000);
    assert.deepEqual(cut.attributes?.map((a) => a.key), ['yuxi.session_id', 'gen_ai.output.messages', 'gen_ai.request.model', 'yuxi.truncated']);
    assert.equal(cut.droppedAttributesCount, 2);
    assert.deepEqual([cut.traceId, cut.spanId, cut.name], [base.traceId, base.spanId, base.name]);
    assert.ok(Buffer.byteLength(JSON.stringify(cut)) <= 40_000);
    assert.equal(span.attributes?.length, 4, 'the span given is not changed');
  });
});

describe('grouping stored spans into resourceSpans / scopeSpans (groupSpans)', () => {
  it('groups by resource, then scope, each group where its first span is, spans in the given order', () => {
    const api = { attributes: [{ key: 'service.name', value: { stringValue: 'yuxi-api' } }] };
    const worker = { attributes: [{ key: 'service.name', value: { stringValue: 'yuxi-worker' } }] };
    const ours = { name: 'yuxi-agents-sessions' };
    const other = { name: 'other', version: '1' };
    const span = (name: string): OtlpSpan => ({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name, startTimeUnixNano: '1' });
    const request = groupSpans([
      { span: span('POST /events'), resource: { ...api }, scope: ours },
      { span: span('invoke_agent'), resource: worker, scope: ours },
      { span: span('accept_input'), resource: { ...api }, scope: { ...ours } },
      { span: span('chat'), resource: worker, scope: other },
      { span: span('execute_tool'), resource: worker, scope: ours },
    ]);
    assert.deepEqual(
      request.resourceSpans.map((r) => [r.resource, r.scopeSpans!.map((s) => [s.scope, s.spans!.map((x) => x.name)])]),
      [
        [api, [[ours, ['POST /events', 'accept_input']]]],
        [worker, [[ours, ['invoke_agent', 'execute_tool']], [other, ['chat']]]],
      ],
    );
    assert.deepEqual(groupSpans([]), { resourceSpans: [] });
  });
});
