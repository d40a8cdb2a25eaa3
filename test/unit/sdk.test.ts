import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentsApiError, AgentsProtocolError, DEFAULT_RETRY, parseSse, type SessionEvent, type SessionEventOf, SseLineParser, type SseRecord } from '#libs/sdk';
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
        yuxi: { run_id: 'r' },
      },
      { type: 'yuxi.session.resync', event_id: 'evt_2', session_id: 's', created_at: 1, reason: 'cursor_expired' },
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
