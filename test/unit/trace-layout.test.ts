import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { OtlpSpan, OtlpTraceData } from '#libs/sdk';
import { attributeText, kindText, layoutTrace, traceUrl, turnTraceId } from '../../apps/console/src/pages/trace-layout.js';

// The console's trace waterfall (apps/console/src/pages/TracePanel.tsx) draws what this lays out.

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
/** 2026-01-01T00:00:00Z in unix nanoseconds: beyond 2^53, as every real span time is. */
const T0 = 1767225600000000000n;
const at = (ms: number) => String(T0 + BigInt(Math.round(ms * 1e6)));

function span(spanId: string, name: string, startMs: number, endMs: number, extra: Partial<OtlpSpan> = {}): OtlpSpan {
  return { traceId: TRACE, spanId, name, kind: 1, startTimeUnixNano: at(startMs), endTimeUnixNano: at(endMs), attributes: [], events: [], links: [], status: { code: 0 }, ...extra };
}

function trace(...services: [string, OtlpSpan[]][]): OtlpTraceData {
  return {
    resourceSpans: services.map(([service, spans]) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
      scopeSpans: [{ scope: { name: 'yuxi' }, spans }],
    })),
  };
}

const names = (otlp: OtlpTraceData) => layoutTrace(otlp).rows.map((row) => `${'  '.repeat(row.depth)}${row.span.name}`);

describe('the trace waterfall layout', () => {
  it('hangs children under parents, each level by start, whatever order and process the spans came in', () => {
    const otlp = trace(
      ['yuxi-worker', [span('c1', 'chat gpt', 20, 60, { parentSpanId: 'b1' }), span('b1', 'invoke_agent echo', 10, 90, { parentSpanId: 'a2' }), span('t1', 'execute_tool calc', 65, 80, { parentSpanId: 'b1' })]],
      ['yuxi-api', [span('a2', 'accept_input', 2, 8, { parentSpanId: 'a1' }), span('a1', 'POST /api/v1/agents/sessions', 0, 10)]],
    );
    assert.deepEqual(names(otlp), ['POST /api/v1/agents/sessions', '  accept_input', '    invoke_agent echo', '      chat gpt', '      execute_tool calc']);
    const layout = layoutTrace(otlp);
    assert.equal(layout.traceId, TRACE);
    assert.deepEqual(layout.services, ['yuxi-worker', 'yuxi-api'], 'first seen first');
    assert.deepEqual(
      layout.rows.map((row) => [row.service, row.serviceIndex]),
      [['yuxi-api', 1], ['yuxi-api', 1], ['yuxi-worker', 0], ['yuxi-worker', 0], ['yuxi-worker', 0]],
    );
    assert.ok(layout.rows.every((row) => !row.orphan && !row.error));
  });

  it('places bars by start and end relative to the first span, in percent of the whole trace, from nanosecond strings', () => {
    const layout = layoutTrace(trace(['yuxi-api', [span('a', 'root', 0, 200), span('b', 'child', 50, 150, { parentSpanId: 'a' }), span('c', 'late', 190, 200, { parentSpanId: 'a' })]]));
    assert.equal(layout.totalMs, 200);
    assert.deepEqual(
      layout.rows.map((row) => [row.span.name, row.offsetPct, row.widthPct, row.startMs, row.durationMs]),
      [
        ['root', 0, 100, 0, 200],
        ['child', 25, 50, 50, 100],
        ['late', 95, 5, 190, 10],
      ],
    );
    // A sub-millisecond difference survives: the times are subtracted as integers, not as doubles of 1.7e18.
    const fine = layoutTrace(trace(['s', [span('a', 'a', 0, 0.001), span('b', 'b', 0.0005, 0.001)]]));
    assert.deepEqual(
      fine.rows.map((row) => [row.offsetPct, row.widthPct]),
      [
        [0, 100],
        [50, 50],
      ],
    );
  });

  it('shows a span whose parent is missing at the root, as an orphan, with the span that links to that parent (a takeover)', () => {
    const lostRun = '00f067aa0ba902b7';
    const otlp = trace(
      ['yuxi-api', [span('a1', 'POST /events', 0, 5), span('a2', 'accept_input', 1, 4, { parentSpanId: 'a1' })]],
      [
        'yuxi-worker',
        [
          // The dead worker's chat was exported; its invoke_agent never was.
          span('c1', 'chat slow', 10, 30, { parentSpanId: lostRun }),
          span('b2', 'invoke_agent slow', 40, 90, { parentSpanId: 'a2', links: [{ traceId: TRACE, spanId: lostRun, attributes: [{ key: 'yuxi.link.reason', value: { stringValue: 'takeover' } }] }] }),
        ],
      ],
    );
    const layout = layoutTrace(otlp);
    assert.deepEqual(
      layout.rows.map((row) => [row.span.name, row.depth, row.orphan]),
      [
        ['POST /events', 0, false],
        ['accept_input', 1, false],
        ['invoke_agent slow', 2, false],
        ['chat slow', 0, true],
      ],
    );
    const chat = layout.rows.find((row) => row.span.spanId === 'c1')!;
    assert.deepEqual(chat.linkedFrom, [{ traceId: TRACE, spanId: 'b2', name: 'invoke_agent slow', reason: 'takeover' }]);
    const takeover = layout.rows.find((row) => row.span.spanId === 'b2')!;
    assert.deepEqual(takeover.linksTo, [{ traceId: TRACE, spanId: lostRun, name: null, reason: 'takeover' }], 'the lost span is not in the trace: no name');
    assert.deepEqual(takeover.linkedFrom, []);
  });

  it('draws a link to a span of the trace under that span too, and empty or zero parents as roots', () => {
    const layout = layoutTrace(trace(['s', [span('a', 'first', 0, 10, { parentSpanId: '' }), span('b', 'second', 20, 30, { parentSpanId: '0000000000000000', links: [{ traceId: TRACE, spanId: 'a' }] })]]));
    assert.deepEqual(
      layout.rows.map((row) => [row.span.name, row.depth, row.orphan]),
      [
        ['first', 0, false],
        ['second', 0, false],
      ],
    );
    assert.deepEqual(layout.rows[0].linkedFrom, [{ traceId: TRACE, spanId: 'b', name: 'second', reason: null }]);
    assert.deepEqual(layout.rows[1].linksTo, [{ traceId: TRACE, spanId: 'a', name: 'first', reason: null }]);
  });

  it('flags error status, and survives rings of parents, duplicate ids, bad times and a trace of one instant', () => {
    const layout = layoutTrace(
      trace([
        's',
        [
          span('x', 'ring one', 0, 10, { parentSpanId: 'y' }),
          span('y', 'ring two', 5, 10, { parentSpanId: 'x' }),
          span('d', 'dup', 0, 1, { status: { code: 2, message: 'boom' } }),
          span('d', 'dup again', 0, 1, { status: { code: 'STATUS_CODE_ERROR' } }),
          { ...span('z', 'no times', 0, 0), startTimeUnixNano: 'soon', endTimeUnixNano: '' },
        ],
      ]),
    );
    assert.equal(layout.rows.length, 5, 'every span drawn once');
    assert.deepEqual(
      layout.rows.filter((row) => row.error).map((row) => row.span.name),
      ['dup', 'dup again'],
    );
    const ring = layout.rows.filter((row) => row.span.name.startsWith('ring'));
    assert.deepEqual(
      ring.map((row) => [row.span.name, row.depth, row.orphan]),
      [
        ['ring one', 0, true],
        ['ring two', 1, false],
      ],
    );
    const bad = layout.rows.find((row) => row.span.name === 'no times')!;
    assert.deepEqual([bad.offsetPct, bad.durationMs], [0, 0]);

    const instant = layoutTrace(trace(['s', [span('a', 'a', 5, 5), span('b', 'b', 5, 5, { parentSpanId: 'a' })]]));
    assert.deepEqual(
      instant.rows.map((row) => [row.offsetPct, row.widthPct]),
      [
        [0, 100],
        [0, 100],
      ],
    );
  });

  it('stops drawing at the row limit and says how many it left out; an empty trace has nothing to draw', () => {
    const spans = Array.from({ length: 30 }, (_, i) => span(`s${i}`, `step ${i}`, i, i + 1, i === 0 ? {} : { parentSpanId: `s${i - 1}` }));
    const layout = layoutTrace(trace(['s', spans]), 10);
    assert.equal(layout.rows.length, 10);
    assert.equal(layout.omitted, 20);
    assert.equal(layout.rows[9].depth, 9, 'a deep chain is walked without recursion');
    assert.deepEqual(layoutTrace({ resourceSpans: [] }), { traceId: null, totalMs: 0, rows: [], services: [], omitted: 0 });
    assert.deepEqual(layoutTrace(null).rows, []);
    assert.equal(layoutTrace(trace([' ', []])).rows.length, 0);
  });

  it('names a resource without service.name, spans kinds and attribute values in words', () => {
    const layout = layoutTrace({ resourceSpans: [{ scopeSpans: [{ spans: [span('a', 'a', 0, 1)] }] }] });
    assert.equal(layout.rows[0].service, 'unknown service');
    assert.deepEqual([kindText(2), kindText(3), kindText('SPAN_KIND_CONSUMER'), kindText(undefined), kindText(42)], ['server', 'client', 'consumer', 'unspecified', 'unspecified']);
    assert.equal(attributeText({ stringValue: 'gpt' }), 'gpt');
    assert.equal(attributeText({ intValue: '120' }), '120');
    assert.equal(attributeText({ intValue: 7 }), '7');
    assert.equal(attributeText({ doubleValue: 0.5 }), '0.5');
    assert.equal(attributeText({ boolValue: false }), 'false');
    assert.equal(attributeText({ arrayValue: { values: [{ stringValue: 'stop' }, { stringValue: 'length' }] } }), '[stop, length]');
    assert.equal(attributeText({ kvlistValue: { values: [{ key: 'a', value: { intValue: 1 } }] } }), '{a=1}');
    assert.equal(attributeText(undefined), '');
  });
});

describe('the trace UI link', () => {
  it('puts the trace id into TRACE_URL_TEMPLATE, every occurrence', () => {
    assert.equal(traceUrl('https://jaeger.example.com/trace/{trace_id}', TRACE), `https://jaeger.example.com/trace/${TRACE}`);
    assert.equal(traceUrl('http://tempo:3000/explore?q={trace_id}&also={trace_id}', TRACE), `http://tempo:3000/explore?q=${TRACE}&also=${TRACE}`);
  });

  it('is none without a template, a placeholder, a valid trace id, or an http(s) result', () => {
    assert.equal(traceUrl(null, TRACE), null);
    assert.equal(traceUrl('', TRACE), null);
    assert.equal(traceUrl('https://jaeger.example.com/search', TRACE), null, 'no {trace_id}');
    assert.equal(traceUrl('https://jaeger.example.com/trace/{trace_id}', null), null);
    assert.equal(traceUrl('https://jaeger.example.com/trace/{trace_id}', 'not-a-trace'), null);
    assert.equal(traceUrl('https://jaeger.example.com/trace/{trace_id}', '0'.repeat(32)), null, 'the invalid all-zero id');
    assert.equal(traceUrl('javascript:alert({trace_id})', TRACE), null);
    assert.equal(traceUrl('/relative/{trace_id}', TRACE), null);
  });

  it('reads a turn\u2019s yuxi.trace_id where the view has one', () => {
    assert.equal(turnTraceId({ id: 't', yuxi: { trace_id: TRACE } }), TRACE);
    assert.equal(turnTraceId({ id: 't', yuxi: { trace_id: null } }), null);
    assert.equal(turnTraceId({ id: 't' }), null);
    assert.equal(turnTraceId({ yuxi: { trace_id: 'XYZ' } }), null);
    assert.equal(turnTraceId(null), null);
  });
});
