import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { env } from '../support/env.js';
import { API, createSession, http, newKey, sendMessage } from '../support/http.js';
import { bootstrap, call } from '../support/identity.js';
import { moveReplayWindow, NODE_FILLING_INPUT } from '../support/replay-window.js';
import { SseStream } from '../support/sse.js';

describe('SSE stream', () => {
  it('numbers durable events 1, 2, 3… per session and carries any user text unchanged', async () => {
    // The text looks like the placeholder the outbox once used for sequence numbers.
    const text = '__yuxi_seq__';
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, text);
      await stream.waitForType('agent.session.turn.completed');
      // Live-only: the deltas and the announcement of the assistant message they stream into.
      const live = (e: { type: string; data: any }) =>
        e.type === 'agent.session.turn.output_text.delta' ||
        e.type === 'agent.session.turn.content_part.added' ||
        (e.type === 'agent.session.turn.item.added' && e.data.item.role === 'assistant');
      const durable = stream.events.filter((e) => !live(e));
      assert.ok(stream.events.filter(live).every((e) => e.data.yuxi?.seq === undefined), 'live events carry no yuxi.seq');
      assert.deepEqual(
        durable.map((e) => e.data.yuxi?.seq),
        durable.map((_, i) => i + 1),
        'durable events carry yuxi.seq without gaps, starting at 1',
      );
      const userItem = stream.events.find((e) => e.type === 'agent.session.turn.item.added' && e.data.item.role === 'user');
      assert.equal(userItem?.data.item.content[0].text, text);
    } finally {
      stream.close();
    }
  });

  it('resumes after a disconnect mid-turn with exactly the remaining suffix', async () => {
    const session = await createSession();
    const witness = await SseStream.open(session.id);
    const first = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, 'one two three four five six seven eight [[delay:40]]');
      await first.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' two');
      first.close();
      const seen = [...first.events];
      const cursor = seen.at(-1)?.id;
      assert.ok(cursor);

      const resumed = await SseStream.open(session.id, { lastEventId: cursor });
      const completed = await resumed.waitForType('agent.session.turn.completed');
      await witness.waitForType('agent.session.turn.completed', completed.data.turn_id);
      resumed.close();

      const combined = [...seen, ...resumed.events];
      const ids = combined.map((e) => e.data.event_id);
      assert.equal(new Set(ids).size, ids.length, 'no event_id is repeated');
      assert.deepEqual(ids, witness.events.map((e) => e.data.event_id), 'no gap: the union equals an uninterrupted subscription');
      const text = combined
        .filter((e) => e.type === 'agent.session.turn.output_text.delta')
        .map((e) => e.data.delta)
        .join('');
      assert.equal(text, 'Echo: one two three four five six seven eight');
    } finally {
      witness.close();
      first.close();
    }
  });

  it('resumes across two turns: the rest of the first and all of the second, nothing twice', async () => {
    const session = await createSession();
    const witness = await SseStream.open(session.id);
    const first = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, 'turn one is a little long [[delay:30]]');
      await first.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' one');
      first.close();
      const seen = [...first.events];
      await sendMessage(session.id, 'turn two');
      let done = 0;
      await witness.waitFor((e) => e.type === 'agent.session.turn.completed' && ++done === 2);

      const resumed = await SseStream.open(session.id, { lastEventId: seen.at(-1)!.id });
      try {
        const lastId = witness.events.at(-1)!.data.event_id;
        await resumed.waitFor((e) => e.data.event_id === lastId);
        const ids = [...seen, ...resumed.events].map((e) => e.data.event_id);
        assert.deepEqual(ids, witness.events.map((e) => e.data.event_id));
        assert.equal(resumed.events.filter((e) => e.type === 'agent.session.turn.completed').length, 2);
      } finally {
        resumed.close();
      }
    } finally {
      witness.close();
    }
  });

  it('answers a stream=true create with the session stream, starting with agent.session.created', async () => {
    const stream = await SseStream.request(`${API}/sessions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${env.apiKey}`, 'content-type': 'application/json', 'idempotency-key': newKey('stream') },
      body: JSON.stringify({ agent_id: 'default-chatbot', input: 'streamed create', stream: true }),
    });
    try {
      assert.equal(stream.status, 201);
      assert.match(stream.contentType, /text\/event-stream/);
      const completed = await stream.waitForType('agent.session.turn.completed');
      const first = stream.events[0]!;
      assert.equal(first.type, 'agent.session.created');
      assert.equal(first.data.session.object, 'agent.session');
      assert.equal(first.data.session.yuxi.receipt.status, 'accepted');
      const sessionId = first.data.session.id;
      assert.equal(completed.data.session_id, sessionId);
      const read = await http(`${API}/sessions/${sessionId}`);
      assert.equal(read.body.yuxi.receipt, null);
      assert.equal(read.body.status, 'completed');
    } finally {
      stream.close();
    }
    const noInput = await http(`${API}/sessions`, { idempotencyKey: newKey(), body: { agent_id: 'default-chatbot', stream: true } });
    assert.equal(noInput.status, 422);
  });

  it('keeps the subscription open across turns and sends heartbeats', async () => {
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      await sendMessage(session.id, 'first');
      const a = await stream.waitForType('agent.session.turn.completed');
      await sendMessage(session.id, 'second');
      const b = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== a.data.turn_id);
      assert.notEqual(a.data.turn_id, b.data.turn_id);
    } finally {
      stream.close();
    }
    const raw = await fetch(`${env.apiUrl}${API}/sessions/${session.id}/events`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    const reader = raw.body!.getReader();
    let text = '';
    while (!text.includes(': ping')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    await reader.cancel();
    assert.match(text, /^: ping$/m, 'heartbeat comment arrives on an idle stream');
  });

  it('answers a cursor older than the replay window with yuxi.session.resync', async () => {
    const session = await createSession(`before the window moved ${NODE_FILLING_INPUT}`);
    const stream = await SseStream.open(session.id);
    const done = await stream.waitForType('agent.session.turn.completed');
    stream.close();
    const oldCursor = stream.events[0]!.id;

    // The window moves on for real: see moveReplayWindow.
    await moveReplayWindow(session.id);
    const resumed = await SseStream.open(session.id, { lastEventId: oldCursor });
    try {
      const resync = await resumed.waitForType('yuxi.session.resync');
      assert.equal(resumed.events[0]!.type, 'yuxi.session.resync', 'resync comes first');
      assert.equal(resync.data.session_id, session.id);
      assert.equal(typeof resync.data.event_id, 'string');
      const next = await resumed.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== done.data.turn_id);
      assert.ok(next);
    } finally {
      resumed.close();
    }
  });

  it('starts a subscription without a cursor with yuxi.session.resync when the session\'s stream expired, then goes on live', async () => {
    // Created, without input, by the replica whose replay TTL is 10 s (EVENTS_REPLAY_TTL_SECONDS; long enough that
    // the outbox relay has confirmed the row before it expires, or the relay would publish it again):
    // its one event is published there and nothing publishes after it, so its stream (and the
    // stream's sequence number) expire for real.
    const created = await call(bootstrap, `${API}/sessions`, { body: { agent_id: 'default-chatbot' }, idempotencyKey: newKey('expiring'), baseUrl: env.apiUrlShortWindow });
    assert.equal(created.status, 201, created.text);
    const session = created.body;
    const key = `yuxi:session-events:{${session.id}}`;
    const redis = new Redis(env.redisUrl);
    try {
      // Read only: the stream appears (published after the answer), then its TTL runs out.
      for (let i = 0; (await redis.exists(key)) === 0; i += 1) {
        assert.ok(i < 100, 'the session\'s stream appeared within 10 s');
        await sleep(100);
      }
      for (let i = 0; (await redis.exists(key)) === 1; i += 1) {
        assert.ok(i < 300, 'the session\'s stream expired within 30 s');
        await sleep(100);
      }
    } finally {
      redis.disconnect();
    }
    const fresh = await SseStream.open(session.id);
    try {
      const resync = await fresh.waitForType('yuxi.session.resync');
      assert.equal(fresh.events[0]!.type, 'yuxi.session.resync', 'resync comes first');
      assert.equal(resync.data.reason, 'events_lost');
      await sendMessage(session.id, 'after the stream expired');
      const next = await fresh.waitForType('agent.session.turn.completed');
      assert.equal(next.data.turn.status, 'completed', 'the subscription goes on with new events');
    } finally {
      fresh.close();
    }
  });

  it('rejects a malformed or foreign cursor with 422 before any SSE headers', async () => {
    const session = await createSession();
    const other = await createSession('other');
    const bad = await SseStream.open(session.id, { lastEventId: 'not-a-cursor!' });
    assert.equal(bad.status, 422);
    assert.match(bad.contentType, /application\/json/);
    assert.equal(JSON.parse(bad.bodyText).error.code, 'invalid_last_event_id');

    const otherStream = await SseStream.open(other.id);
    const event = await otherStream.waitForType('agent.session.turn.completed');
    otherStream.close();
    const foreign = await SseStream.open(session.id, { lastEventId: event.id });
    assert.equal(foreign.status, 422);
    assert.equal(JSON.parse(foreign.bodyText).error.code, 'invalid_last_event_id');

    const missing = await http(`${API}/sessions/00000000-0000-7000-8000-000000000000/events`);
    assert.equal(missing.status, 404);
  });

  it('one format: every event carries yuxi.format 2; a cursor of the earlier three-part form is refused with 400 saying how to resume', async () => {
    const session = await createSession('format');
    const stream = await SseStream.open(session.id);
    const done = await stream.waitForType('agent.session.turn.completed');
    stream.close();
    assert.ok(stream.events.length > 3);
    for (const event of stream.events) assert.equal(event.data.yuxi?.format, 2, `${event.type} carries the format`);

    // The same position as the earlier server wrote it: without the sequence field.
    const [version, sessionId, streamId] = Buffer.from(done.id, 'base64url').toString('utf8').split(':');
    assert.equal(version, 'v2');
    const retired = Buffer.from(`v2:${sessionId}:${streamId}`).toString('base64url');
    const refused = await SseStream.open(session.id, { lastEventId: retired });
    assert.equal(refused.status, 400);
    assert.match(refused.contentType, /application\/json/);
    const error = JSON.parse(refused.bodyText).error;
    assert.equal(error.code, 'last_event_id_retired');
    assert.match(error.message, /reconnect without Last-Event-ID/);

    // The current cursor of that very event resumes.
    const resumed = await SseStream.open(session.id, { lastEventId: done.id });
    assert.equal(resumed.status, 200);
    resumed.close();
  });
});
