import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ROOT_CONTEXT, type Span, SpanStatusCode } from '@opentelemetry/api';
import { logMixin } from '#libs/config';
import { contextOf, endRequestSpan, httpMethodAttribute, requestSpanName, sessionIdOfRoute, traceIdOf, tracesRequestPath, TracingSettingError, tracingSettings } from '#libs/telemetry';
import { toRunDto, toTurnDto } from '#libs/engine';
import { deliveryTrace, deliveryTurnAttribute } from '#libs/webhooks';
import { aRun, aTurn } from './support/aggregate-fixtures.js';

// The edges of tracing without a stack (tracing stays off in this process: the unit tests share
// processes, and nothing here registers a provider): which requests get a span and how it is
// named and ended, the webhook fan-out's trace column, the settings, and stored contexts read back.

const SESSION = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = `00-${TRACE}-00f067aa0ba902b7-01`;

describe('request spans', () => {
  it('skips probes, scrapes, docs and the console, and traces the API', () => {
    for (const path of ['/health', '/health/live', '/health/ready', '/metrics', '/docs', '/docs/swagger-ui.css', '/openapi.json', '/console', '/console/assets/index.js', '/HEALTH']) {
      assert.equal(tracesRequestPath(path), false, path);
    }
    for (const path of ['/api/v1/agents/sessions', `/api/v1/agents/sessions/${SESSION}/events`, '/', '/healthy', '/metricsx', '/consoles']) {
      assert.equal(tracesRequestPath(path), true, path);
    }
  });

  it('names a span by method and route template, the method alone without a route, HTTP for an unknown method', () => {
    assert.equal(requestSpanName('post', '/api/v1/agents/sessions/:session_id/events'), 'POST /api/v1/agents/sessions/:session_id/events');
    assert.equal(requestSpanName('GET', null), 'GET');
    assert.equal(requestSpanName('BREW', '/x'), 'HTTP /x');
    assert.equal(httpMethodAttribute('patch'), 'PATCH');
    assert.equal(httpMethodAttribute('BREW'), '_OTHER');
  });

  it('reads the session id at the position of the route\'s :session_id, only a UUID', () => {
    assert.equal(sessionIdOfRoute('/api/v1/agents/sessions/:session_id/turns/:turn_id', `/api/v1/agents/sessions/${SESSION.toUpperCase()}/turns/t1`), SESSION);
    assert.equal(sessionIdOfRoute('/api/v1/agents/sessions/:session_id', '/api/v1/agents/sessions/not-a-uuid'), null);
    assert.equal(sessionIdOfRoute('/api/v1/agents/sessions', '/api/v1/agents/sessions'), null);
    assert.equal(sessionIdOfRoute(null, `/api/v1/agents/sessions/${SESSION}`), null);
  });

  it('ends a span with its route, status and (2xx only) session; a 5xx is an error, a 4xx is not', () => {
    const ended = (status: number | null, route: string | null = '/api/v1/agents/sessions/:session_id', method = 'POST') => {
      const span = recordingSpan();
      endRequestSpan(span.span, method, { route, path: `/api/v1/agents/sessions/${SESSION}`, status });
      return span;
    };
    const ok = ended(200);
    assert.equal(ok.name, 'POST /api/v1/agents/sessions/:session_id');
    assert.deepEqual(ok.attributes, { 'http.route': '/api/v1/agents/sessions/:session_id', 'yuxi.session_id': SESSION, 'http.response.status_code': 200 });
    assert.equal(ok.status, undefined);
    assert.equal(ok.ends, 1);
    assert.equal(ended(404).status, undefined);
    // A refused request names no session: the id in its path is only the client's claim (another owner's session, no credentials).
    for (const status of [401, 403, 404, 409, 503]) assert.equal(ended(status).attributes['yuxi.session_id'], undefined, String(status));
    assert.equal(ended(null).attributes['yuxi.session_id'], undefined, 'a client that left before any response');
    assert.equal(ended(202).attributes['yuxi.session_id'], SESSION);
    const failed = ended(503);
    assert.equal(failed.status, SpanStatusCode.ERROR);
    assert.equal(failed.attributes['error.type'], '503');
    const gone = ended(null, null);
    assert.equal(gone.name, 'POST');
    assert.deepEqual(gone.attributes, {});
    // A read of a session names no session: the span store keeps only what changes one.
    assert.deepEqual(ended(200, undefined, 'GET').attributes, { 'http.route': '/api/v1/agents/sessions/:session_id', 'http.response.status_code': 200 });
  });
});

describe('webhook fan-out trace column', () => {
  it('adds neither column nor parameter without a stored context (tracing off)', () => {
    const params: unknown[] = [];
    assert.deepEqual(deliveryTrace((value) => `$${params.push(value)}`, undefined), { column: '', value: '' });
    assert.deepEqual(params, []);
  });

  it('writes the stored context as one jsonb parameter', () => {
    const params: unknown[] = [];
    const trace = deliveryTrace((value) => `$${params.push(value)}`, { traceparent: PARENT, tracestate: 'k=v' });
    assert.deepEqual(trace, { column: ', trace', value: ', $1::jsonb' });
    assert.deepEqual(params, [JSON.stringify({ traceparent: PARENT, tracestate: 'k=v' })]);
  });

  it('names the turn of a delivery whose event is a turn\'s (its webhook.deliver span is then in that turn\'s trace entry), nothing otherwise', () => {
    assert.deepEqual(deliveryTurnAttribute(JSON.stringify({ id: 'e', data: { session_id: SESSION, turn_id: SESSION } })), { 'yuxi.turn_id': SESSION });
    assert.deepEqual(deliveryTurnAttribute(JSON.stringify({ id: 'e', data: { session_id: SESSION } })), {});
    assert.deepEqual(deliveryTurnAttribute(JSON.stringify({ data: { turn_id: 'not-a-turn' } })), {});
    assert.deepEqual(deliveryTurnAttribute('not json'), {});
    assert.deepEqual(deliveryTurnAttribute('null'), {});
  });
});

describe('tracing settings', () => {
  it('auto: on iff an OTLP endpoint is set, exporting by http/protobuf unless told http/json', () => {
    assert.deepEqual(tracingSettings({}, 'api'), { enabled: false, exporter: null, serviceName: 'yuxi-api', captureContent: false });
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'worker').exporter, 'http/protobuf');
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, 'api').exporter, 'http/json');
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }, 'api').exporter, 'http/protobuf');
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, 'api').enabled, false);
    assert.equal(tracingSettings({}, 'worker').serviceName, 'yuxi-worker');
    assert.equal(tracingSettings({ OTEL_SERVICE_NAME: 'agents' }, 'worker').serviceName, 'agents');
  });

  it('on: without an endpoint too (per-session store only); off and OTEL_SDK_DISABLED win', () => {
    assert.deepEqual(tracingSettings({ TRACING: 'on' }, 'api'), { enabled: true, exporter: null, serviceName: 'yuxi-api', captureContent: false });
    assert.equal(tracingSettings({ TRACING: 'off', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c' }, 'api').enabled, false);
    assert.equal(tracingSettings({ TRACING: 'on', OTEL_SDK_DISABLED: 'true' }, 'api').enabled, false);
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_SDK_DISABLED: 'TRUE' }, 'api').enabled, false);
    assert.equal(tracingSettings({ TRACING: 'ON' }, 'api').enabled, true);
  });

  it('OTEL_TRACES_EXPORTER=none keeps tracing on and exports nothing', () => {
    assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_TRACES_EXPORTER: 'none' }, 'api'), { enabled: true, exporter: null, serviceName: 'yuxi-api', captureContent: false });
  });

  it('refuses grpc and unknown values, only while tracing would be on', () => {
    assert.throws(() => tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'api'), (error: unknown) => error instanceof TracingSettingError && /grpc is not built in/.test(error.message));
    assert.equal(tracingSettings({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'api').enabled, false);
    assert.throws(() => tracingSettings({ TRACING: 'maybe' }, 'api'), TracingSettingError);
  });

  it('message content only when asked for', () => {
    assert.equal(tracingSettings({ TRACING: 'on', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true' }, 'worker').captureContent, true);
    assert.equal(tracingSettings({ TRACING: 'on', OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'yes' }, 'worker').captureContent, false);
  });
});

describe('stored trace contexts', () => {
  it('traceIdOf reads a valid traceparent and nothing else', () => {
    assert.equal(traceIdOf({ traceparent: PARENT }), TRACE);
    assert.equal(traceIdOf({ traceparent: PARENT, tracestate: 'a=b' }), TRACE);
    assert.equal(traceIdOf(null), null);
    assert.equal(traceIdOf(undefined), null);
    assert.equal(traceIdOf({ traceparent: `00-${'0'.repeat(32)}-00f067aa0ba902b7-01` }), null, 'the all-zero trace id is invalid');
    assert.equal(traceIdOf({ traceparent: `00-${TRACE.toUpperCase()}-00f067aa0ba902b7-01` }), null, 'uppercase hex is not W3C');
    assert.equal(traceIdOf({ traceparent: `00-${TRACE}-00f067aa0ba902b7` }), null);
    assert.equal(traceIdOf({ traceparent: `00-${TRACE}x-00f067aa0ba902b7-01` }), null);
    assert.equal(traceIdOf({ traceparent: '' }), null);
  });

  it('contextOf is the root context while tracing is off, whatever is stored', () => {
    assert.equal(contextOf({ traceparent: PARENT }), ROOT_CONTEXT);
    assert.equal(contextOf({ traceparent: 'garbage' }), ROOT_CONTEXT);
    assert.equal(contextOf(null), ROOT_CONTEXT);
  });

  it('log lines carry no trace fields while tracing is off', () => {
    const fields = logMixin();
    assert.equal('trace_id' in fields, false);
    assert.equal('span_id' in fields, false);
  });
});

describe('trace ids on the turn and run views', () => {
  it('a traced turn and its run say their trace id; an untraced turn and run have no trace_id key at all (their events as before tracing)', () => {
    assert.equal(toTurnDto(aTurn({ traceId: TRACE })).yuxi.trace_id, TRACE);
    assert.equal(toRunDto(aRun({ config: { trace: { traceparent: PARENT } } })).yuxi?.trace_id, TRACE);
    const turn = toTurnDto(aTurn({ traceId: null }));
    assert.deepEqual(Object.keys(turn.yuxi), ['current_run_id', 'result_run_id', 'waitpoint', 'usage', 'context']);
    assert.equal('yuxi' in toRunDto(aRun({ config: {} })), false);
  });
});

/** A stand-in span that records what endRequestSpan does to it. */
function recordingSpan() {
  const seen = { name: '', attributes: {} as Record<string, unknown>, status: undefined as SpanStatusCode | undefined, ends: 0 };
  const span = {
    updateName(name: string) {
      seen.name = name;
      return span;
    },
    setAttribute(key: string, value: unknown) {
      seen.attributes[key] = value;
      return span;
    },
    setStatus(status: { code: SpanStatusCode }) {
      seen.status = status.code;
      return span;
    },
    end() {
      seen.ends += 1;
    },
  };
  return { span: span as unknown as Span, get name() { return seen.name; }, get attributes() { return seen.attributes; }, get status() { return seen.status; }, get ends() { return seen.ends; } };
}
