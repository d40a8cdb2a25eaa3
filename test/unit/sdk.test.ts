import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AgentsApiError,
  AgentsClient,
  AgentsProtocolError,
  DEFAULT_RETRY,
  parseSse,
  type SessionEvent,
  type SessionEventOf,
  SseLineParser,
  type SseRecord,
  type WebhookDelivery,
  type WebhookEventType,
  type WebhookPayload,
  type WebhookPayloadOf,
} from '#libs/sdk';
import { Transport } from '../../libs/sdk/src/transport.js';
import { backoffMs, parseRetryAfter } from '../../libs/sdk/src/retry.js';

function feedAll(pieces: string[]): SseRecord[] {
  const parser = new SseLineParser();
  return pieces.flatMap((piece) => [...parser.feed(piece)]);
}

async function* bytes(pieces: string[]): AsyncGenerator<Uint8Array> {
  for (const piece of pieces) yield new TextEncoder().encode(piece);
}

describe('sdk: SSE parser', () => {
  const stream = ': connected\n\nid: c1\nevent: agent.session.turn.created\ndata: {"a":1}\n\n: ping\n\nretry: 1000\n\nid: c2\nevent: x\ndata: line one\ndata: line two\n\n';

  it('parses messages, comments, multi-line data and retry, whatever the chunking', () => {
    const expected: SseRecord[] = [
      { kind: 'message', message: { id: 'c1', event: 'agent.session.turn.created', data: '{"a":1}' } },
      { kind: 'retry', ms: 1000 },
      { kind: 'message', message: { id: 'c2', event: 'x', data: 'line one\nline two' } },
    ];
    assert.deepEqual(feedAll([stream]), expected);
    // One character at a time: no message is split or merged by where the chunks end.
    assert.deepEqual(feedAll([...stream]), expected);
    // CRLF and lone CR line ends, a CRLF split across chunks, and a BOM.
    const crlf = stream.replaceAll('\n', '\r\n');
    assert.deepEqual(feedAll(['\uFEFF', ...crlf.match(/[\s\S]{1,7}/g)!]), expected);
    assert.deepEqual(feedAll([stream.replaceAll('\n', '\r')]), expected);
  });

  it('keeps the last id across messages, ignores an unfinished message and a bad retry', () => {
    const records = feedAll(['id: a\ndata: 1\n\ndata: 2\n\nretry: soon\n\ndata:3\n\ndata: cut off']);
    assert.deepEqual(records, [
      { kind: 'message', message: { id: 'a', event: 'message', data: '1' } },
      { kind: 'message', message: { id: 'a', event: 'message', data: '2' } },
      { kind: 'message', message: { id: 'a', event: 'message', data: '3' } },
    ]);
  });

  it('decodes UTF-8 split inside a character', async () => {
    const text = 'data: 你好\n\n';
    const encoded = new TextEncoder().encode(text);
    async function* split(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < encoded.length; i++) yield encoded.slice(i, i + 1);
    }
    const records: SseRecord[] = [];
    for await (const record of parseSse(split())) records.push(record);
    assert.deepEqual(records, [{ kind: 'message', message: { id: undefined, event: 'message', data: '你好' } }]);
    const whole: SseRecord[] = [];
    for await (const record of parseSse(bytes([text]))) whole.push(record);
    assert.deepEqual(whole, records);
  });
});

describe('sdk: retry policy', () => {
  const transport = new Transport({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k' });
  const apiError = (status: number, retryable: boolean, retryAfter: number | null = null) =>
    new AgentsApiError(status, { code: 'service_unavailable', message: 'm', type: 'unavailable', retryable, request_id: 'req_1', details: {} }, { retryAfter });

  it('retries 429 after its Retry-After, 5xx only when retryable, gateway errors without a body; never other 4xx', () => {
    assert.equal(transport.retryDelay(apiError(429, false, 5_000), 1), 5_000);
    assert.equal(transport.retryDelay(apiError(429, false, 3_600_000), 1), null, 'a Retry-After beyond the cap is not waited for');
    const delay = transport.retryDelay(apiError(503, true), 1);
    assert.ok(delay !== null && delay >= DEFAULT_RETRY.baseDelayMs / 2 && delay <= DEFAULT_RETRY.baseDelayMs);
    assert.equal(transport.retryDelay(apiError(500, false), 1), null);
    assert.equal(transport.retryDelay(apiError(409, false), 1), null);
    assert.equal(transport.retryDelay(apiError(404, false), 1), null);
    assert.notEqual(transport.retryDelay(new AgentsProtocolError('bad gateway', 502, '<html>'), 1), null);
    assert.equal(transport.retryDelay(new AgentsProtocolError('teapot', 418, ''), 1), null);
  });

  it('backs off exponentially within its cap, and reads both forms of Retry-After', () => {
    const policy = { baseDelayMs: 100, maxDelayMs: 1_000 };
    for (let retry = 1; retry <= 10; retry++) {
      const step = Math.min(1_000, 100 * 2 ** (retry - 1));
      const delay = backoffMs(policy, retry);
      assert.ok(delay >= step / 2 && delay <= step, `retry ${retry}: ${delay} within [${step / 2}, ${step}]`);
    }
    assert.equal(parseRetryAfter('7'), 7_000);
    assert.equal(parseRetryAfter(new Date(10_000 + 30_000).toUTCString(), 10_000), 30_000);
    assert.equal(parseRetryAfter(null), null);
    assert.equal(parseRetryAfter('whenever'), null);
  });
});

describe('sdk: generated event types', () => {
  it('narrows a SessionEvent by its type without casts', () => {
    const events: SessionEvent[] = [
      {
        type: 'agent.session.turn.output_text.delta',
        event_id: 'evt_1',
        session_id: 's',
        created_at: 1,
        turn_id: 't',
        item_id: 'i',
        output_index: 0,
        content_index: 0,
        delta: 'Hello',
        yuxi: { format: 2, run_id: 'r' },
      },
      { type: 'yuxi.session.resync', event_id: 'evt_2', session_id: 's', created_at: 1, reason: 'cursor_expired', yuxi: { format: 2 } },
    ];
    let text = '';
    const reasons: string[] = [];
    for (const event of events) {
      // @ts-expect-error -- not every event has a delta: only a narrowed one does.
      void event.delta;
      if (event.type === 'agent.session.turn.output_text.delta') text += event.delta;
      if (event.type === 'yuxi.session.resync') reasons.push(event.reason);
    }
    assert.equal(text, 'Hello');
    assert.deepEqual(reasons, ['cursor_expired']);
    const done: SessionEventOf<'agent.session.turn.completed'>['turn']['status'] = 'completed';
    // @ts-expect-error -- the turn statuses are a closed set.
    const bogus: SessionEventOf<'agent.session.turn.completed'>['turn']['status'] = 'finished';
    assert.notEqual(done, bogus);
  });
});

describe('sdk: webhooks', () => {
  it('narrows a WebhookPayload by its type without casts; its types are exactly the event types of the delivery log', () => {
    const payloads: WebhookPayload[] = [
      { id: 'evt_1', type: 'agent.session.turn.failed', created_at: 1, data: { session_id: 's', turn_id: 't', status: 'failed', error_code: 'model_bad_request' }, yuxi: { seq: 3 } },
      { id: 'evt_2', type: 'yuxi.session.turn.waiting', created_at: 1, data: { session_id: 's', turn_id: 't', status: 'requires_action', waitpoint_kind: 'question' }, yuxi: { seq: 4 } },
      { id: 'evt_3', type: 'webhook.test', created_at: 1, data: { endpoint_id: 'e' } },
    ];
    const seen: string[] = [];
    for (const payload of payloads) {
      // @ts-expect-error -- only a narrowed payload has a typed waitpoint_kind (unknown until then).
      const kind: string | undefined = payload.data.waitpoint_kind;
      void kind;
      if (payload.type === 'agent.session.turn.failed') seen.push(payload.data.error_code ?? '');
      if (payload.type === 'yuxi.session.turn.waiting') seen.push(payload.data.waitpoint_kind);
      if (payload.type === 'webhook.test') seen.push(payload.data.endpoint_id);
    }
    assert.deepEqual(seen, ['model_bad_request', 'question', 'e']);
    // Both ways: every payload type is an event type of the log, every event type has its payload.
    const everyType: WebhookEventType = 'agent.session.created' as WebhookPayload['type'];
    const everyPayload: WebhookPayload['type'] = 'webhook.test' as WebhookEventType;
    const waiting: WebhookPayloadOf<'yuxi.session.turn.waiting'>['data']['waitpoint_kind'] = 'approval';
    // @ts-expect-error -- the waitpoint kinds are a closed set.
    const bogus: WebhookPayloadOf<'yuxi.session.turn.waiting'>['data']['waitpoint_kind'] = 'cooperation';
    assert.notEqual(everyType, everyPayload);
    assert.notEqual(waiting, bogus);
  });

  it('calls each route of the webhooks resource, and retries none of the calls that make something', async () => {
    const seen: string[] = [];
    let status = 200;
    const delivery = { id: 'd1', object: 'webhook_delivery' } as WebhookDelivery;
    const fakeFetch = (async (request: Request) => {
      seen.push(`${request.method} ${new URL(request.url).pathname}${new URL(request.url).search} ${request.method === 'GET' || request.method === 'DELETE' ? '' : await request.text()}`.trim());
      const body = status === 200 ? { ...delivery, object: 'list', data: [], has_more: false, last_id: null } : { error: { code: 'service_unavailable', message: 'down', type: 'unavailable', retryable: true, request_id: 'req_1', details: {} } };
      return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    const client = new AgentsClient({ baseUrl: 'http://127.0.0.1:9/', apiKey: 'k', fetch: fakeFetch, retry: { baseDelayMs: 1, maxDelayMs: 1, maxRetries: 2 } });
    const hooks = client.webhooks;
    await hooks.create({ url: 'https://hooks.example.com/x', event_types: ['agent.session.turn.completed'] });
    await hooks.list({ limit: 5 });
    await hooks.get('w/1');
    await hooks.update('w1', { enabled: false });
    await hooks.delete('w1');
    await hooks.rotateSecret('w1');
    await hooks.test('w1');
    await hooks.deliveries('w1', { status: 'failed', limit: 10 });
    await hooks.redeliver('w1', 'd1');
    assert.deepEqual(seen, [
      'POST /api/v1/agents/webhooks {"url":"https://hooks.example.com/x","event_types":["agent.session.turn.completed"]}',
      'GET /api/v1/agents/webhooks?limit=5',
      'GET /api/v1/agents/webhooks/w%2F1',
      'POST /api/v1/agents/webhooks/w1 {"enabled":false}',
      'DELETE /api/v1/agents/webhooks/w1',
      'POST /api/v1/agents/webhooks/w1/rotate-secret',
      'POST /api/v1/agents/webhooks/w1/test',
      'GET /api/v1/agents/webhooks/w1/deliveries?status=failed&limit=10',
      'POST /api/v1/agents/webhooks/w1/deliveries/d1/redeliver',
    ]);

    status = 503;
    for (const call of [() => hooks.create({ url: 'https://hooks.example.com/x' }), () => hooks.rotateSecret('w1'), () => hooks.test('w1'), () => hooks.redeliver('w1', 'd1')]) {
      seen.length = 0;
      await assert.rejects(call(), AgentsApiError);
      assert.equal(seen.length, 1, `one attempt: ${seen.join(', ')}`);
    }
    seen.length = 0;
    await assert.rejects(hooks.get('w1'), AgentsApiError);
    assert.equal(seen.length, 3, 'a read is retried');
  });
});
