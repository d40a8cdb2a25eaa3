import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type ResyncSnapshot, type SessionEventOf, type SessionEventsOptions } from '#libs/sdk';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { newProductUser, openRawStream, type RawStream } from '../support/identity.js';
import { assertContiguous, collect, direct, EVENTS_PATH, inputIds, isPost, LIMIT_MS, RECEIPT_PATH, SLOW, textOf, through } from '../support/sdk.js';
import { moveReplayWindow, NODE_FILLING_INPUT } from '../support/replay-window.js';
import { SseStream } from '../support/sse.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { withWorkerStopped } from '../support/worker-process.js';

/**
 * What an iterator following `turnId` (and `inputId`) yields of a subscription's events: the
 * turn's own, the acceptances of the input and of controls aimed at the turn, resyncs.
 */
function concerning(events: Record<string, any>[], turnId: string, inputId: string | null): Record<string, any>[] {
  return events.filter((event) => {
    if (event.type === 'yuxi.session.resync') return true;
    if ('turn_id' in event) return event.turn_id === turnId;
    if (event.type === 'yuxi.session.event.accepted') return event.receipt.input_id === inputId || event.receipt.turn_id === turnId;
    return false;
  });
}

// The typed client's event streams and retries against the real stack: reconnects, resyncs, lost
// answers looked up or replayed with the same key, a stream cap waited out.
describe('sdk: streams and retries against the real stack', () => {
  let proxy: TcpProxy;
  const witnesses: SseStream[] = [];

  before(async () => {
    proxy = await TcpProxy.start(env.apiUrl);
  });
  after(async () => {
    witnesses.forEach((w) => w.close());
    await proxy.close();
  });

  async function witness(sessionId: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId);
    assert.equal(stream.status, 200, stream.bodyText);
    witnesses.push(stream);
    return stream;
  }

  it('creates a session and streams its first turn to the terminal event, then ends at once when resumed past it', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot', title: 'sdk quick start', input: 'hello from the sdk' });
    const inputId = session.yuxi.receipt?.input_id;
    assert.ok(inputId, 'the create receipt names the input');
    const stream = direct.sessions.events(session.id, { untilInputId: inputId, signal: AbortSignal.timeout(LIMIT_MS) });
    const events = await collect(stream);

    const last = events.at(-1)!;
    assert.equal(last.type, 'agent.session.turn.completed');
    assert.equal(stream.ended, 'turn_terminal');
    assert.equal(last.turn_id, stream.turnId);
    assert.equal(textOf(events), 'Echo: hello from the sdk');
    // agent.session.created (seq 1) concerns no turn: the input's acceptance comes first.
    assert.equal(events[0]!.type, 'yuxi.session.event.accepted');
    assertContiguous(events, 2);
    const turn = await direct.sessions.turn(session.id, stream.turnId!);
    assert.equal(turn.status, 'completed');

    // Resumed after its terminal event: nothing comes, the iterator reads the turn and ends.
    const again = direct.sessions.events(session.id, { lastEventId: stream.lastEventId, untilTurnId: stream.turnId!, signal: AbortSignal.timeout(LIMIT_MS) });
    assert.deepEqual(await collect(again), []);
    assert.equal(again.ended, 'turn_terminal');
    assert.equal(again.turn?.status, 'completed');
  });

  /**
   * A slow turn followed through the proxy, with `fault` applied to every open connection at the
   * third delta; the iterator must deliver what an uninterrupted subscription got, up to the turn's
   * terminal event, each event once, in order.
   */
  async function followThroughFault(fault: () => number, options: SessionEventsOptions = {}): Promise<void> {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const reference = await witness(session.id);
    const client = through(proxy);
    const receipt = await client.sessions.sendMessage(session.id, SLOW);
    const opened = proxy.requestsTo('GET', EVENTS_PATH).length;
    const stream = client.sessions.events(session.id, { untilInputId: receipt.input_id!, reconnectDelayMs: 20, signal: AbortSignal.timeout(LIMIT_MS), ...options });
    let deltas = 0;
    let hit = 0;
    const events = await collect(stream, (event) => {
      if (event.type === 'agent.session.turn.output_text.delta' && ++deltas === 3) hit = fault();
    });
    assert.ok(hit >= 1, 'the fault hit the open stream');

    const last = events.at(-1)!;
    assert.equal(last.type, 'agent.session.turn.completed');
    assert.equal(last.turn_id, stream.turnId);
    await reference.waitForType('agent.session.turn.completed', stream.turnId!);
    const expected = concerning(
      reference.events.map((e) => e.data),
      stream.turnId!,
      receipt.input_id,
    ).map((e) => e.event_id as string);
    assert.deepEqual(
      events.map((e) => e.event_id),
      expected.slice(0, expected.indexOf(last.event_id) + 1),
      'the same events of the turn as an uninterrupted subscription, none twice, none missing',
    );
    assert.equal(textOf(events), 'Echo: one two three four five six seven eight nine ten');
    assertContiguous(events, 2);

    const subscriptions = proxy.requestsTo('GET', EVENTS_PATH).slice(opened);
    assert.ok(subscriptions.length >= 2, 'it reconnected');
    assert.equal(subscriptions[0]!.headers['last-event-id'], undefined);
    assert.ok(subscriptions[1]!.headers['last-event-id'], 'the reconnection sends Last-Event-ID');
    const thirdDelta = events.filter((e) => e.type === 'agent.session.turn.output_text.delta')[2]!;
    assert.ok(events.indexOf(thirdDelta) < events.length - 1, 'events came after the fault');
  }

  it('reconnects after the connection is cut mid-turn: every event exactly once, in order, ending at the terminal event', async () => {
    await followThroughFault(() => proxy.cutAll());
  });

  it('replaces a connection that went silent mid-turn (no heartbeat within idleTimeoutMs), then resumes the same way', async () => {
    // The suite's api sends a heartbeat every second (SSE_HEARTBEAT_MS): three seconds of silence is a dead connection.
    await followThroughFault(() => proxy.freezeAll(), { idleTimeoutMs: 3_000 });
  });

  it('looks the receipt up after a lost answer instead of submitting again: one input', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const client = through(proxy);
    const posts = proxy.requestsTo('POST', EVENTS_PATH).length;
    const lookups = proxy.requestsTo('GET', RECEIPT_PATH).length;
    proxy.failNext(isPost(EVENTS_PATH), 'drop-response');

    const receipt = await client.sessions.sendMessage(session.id, 'my answer is lost on the way');

    const sent = proxy.requestsTo('POST', EVENTS_PATH).slice(posts);
    const looked = proxy.requestsTo('GET', RECEIPT_PATH).slice(lookups);
    assert.equal(sent.length, 1, 'the event was not sent again');
    assert.equal(sent[0]!.status, null, 'its answer never reached the client');
    assert.equal(looked.length, 1);
    assert.equal(looked[0]!.status, 200);
    const key = sent[0]!.headers['idempotency-key']!;
    assert.ok(key);
    assert.equal(new URL(looked[0]!.path, 'http://x').searchParams.get('idempotency_key'), key, 'looked up with the same key');
    assert.deepEqual(await inputIds(session.id), [receipt.input_id], 'exactly one input');
    assert.deepEqual(await direct.sessions.receipt(session.id, key), receipt);
  });

  it('resends with the same key when the request never arrived (the receipt is not found yet): one input', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const client = through(proxy);
    const posts = proxy.requestsTo('POST', EVENTS_PATH).length;
    const lookups = proxy.requestsTo('GET', RECEIPT_PATH).length;
    proxy.failNext(isPost(EVENTS_PATH), 'drop-request');

    const receipt = await client.sessions.sendMessage(session.id, 'my request is lost on the way');

    const sent = proxy.requestsTo('POST', EVENTS_PATH).slice(posts);
    const looked = proxy.requestsTo('GET', RECEIPT_PATH).slice(lookups);
    assert.deepEqual(
      sent.map((r) => r.status),
      [null, 202],
    );
    assert.deepEqual(
      looked.map((r) => r.status),
      [404],
      'looked up first: 404, not found yet',
    );
    assert.equal(sent[0]!.headers['idempotency-key'], sent[1]!.headers['idempotency-key'], 'the retry reuses the key');
    assert.deepEqual(await inputIds(session.id), [receipt.input_id], 'exactly one input');
  });

  it('replays a create whose answer was lost with the same key: one session, one input', async () => {
    const client = through(proxy);
    const title = `sdk lost create ${randomUUID()}`;
    const posts = proxy.requestsTo('POST', /^\/api\/v1\/agents\/sessions$/).length;
    proxy.failNext(isPost(/^\/api\/v1\/agents\/sessions$/), 'drop-response');

    const session = await client.sessions.create({ agent_id: 'default-chatbot', title, input: 'created once' });

    const sent = proxy.requestsTo('POST', /^\/api\/v1\/agents\/sessions$/).slice(posts);
    assert.deepEqual(
      sent.map((r) => r.status),
      [null, 201],
    );
    assert.equal(sent[0]!.headers['idempotency-key'], sent[1]!.headers['idempotency-key'], 'the retry reuses the key');
    const sessions = await query<{ id: string }>(`SELECT id FROM sessions WHERE title = $1`, [title]);
    assert.deepEqual(
      sessions.map((s) => s.id),
      [session.id],
      'exactly one session',
    );
    assert.deepEqual(await inputIds(session.id), [session.yuxi.receipt?.input_id]);
  });

  it('on resync re-reads the waiting turn and its items, then streams the rest of the turn to its end', async () => {
    // A follow-up queued behind the turn before it starts (the worker is stopped meanwhile): while
    // the turn waits, cancelling it is an input the session accepts.
    const { session, queued } = await withWorkerStopped(async () => {
      const created = await direct.sessions.create({ agent_id: 'default-chatbot', input: `a question first ${NODE_FILLING_INPUT} [[ask:Proceed?]]` });
      return { session: created, queued: await direct.sessions.sendMessage(created.id, 'queued behind the question', { mode: 'follow_up' }) };
    });
    const reference = await witness(session.id);
    // A cursor from early in the turn, then the turn goes on to wait for an answer.
    const first = direct.sessions.events(session.id, { signal: AbortSignal.timeout(LIMIT_MS) });
    for await (const event of first) if (event.type === 'agent.session.turn.created') break;
    const found = await reference.waitForType('yuxi.session.turn.waiting');
    const waiting = found.data as SessionEventOf<'yuxi.session.turn.waiting'>;
    // The replay window moves past the cursor while the turn waits, for real: the follow-up is
    // cancelled through the one-node-window replica (see moveReplayWindow).
    await moveReplayWindow(session.id, { type: 'yuxi.session.input.cancel_input', input_id: queued.input_id });

    const snapshots: ResyncSnapshot[] = [];
    const stream = direct.sessions.events(session.id, {
      lastEventId: first.lastEventId,
      untilTurnId: waiting.turn_id,
      onResync: (snapshot) => {
        snapshots.push(snapshot);
      },
      signal: AbortSignal.timeout(LIMIT_MS),
    });
    const question = waiting.waitpoint.questions?.[0];
    assert.ok(question);
    const events = await collect(stream, async (event, index) => {
      if (index !== 0) return;
      assert.equal(event.type, 'yuxi.session.resync', 'the resync comes first');
      await direct.sessions.resume(session.id, {
        turn_id: waiting.turn_id,
        waitpoint_id: waiting.waitpoint.id,
        response: { type: 'answer', answers: [{ question_id: question.question_id, answer: 'yes please' }] },
      });
    });

    assert.equal(snapshots.length, 1);
    const [snapshot] = snapshots;
    assert.equal(snapshot!.event, events[0]);
    assert.equal(snapshot!.turn?.id, waiting.turn_id);
    assert.equal(snapshot!.turn?.status, 'requires_action');
    assert.ok(
      snapshot!.items.some((item) => JSON.stringify(item).includes('a question first')),
      'the items of the turn were read back',
    );
    assert.equal(stream.lastResync, snapshot);
    const last = events.at(-1)!;
    assert.equal(last.type, 'agent.session.turn.completed');
    assert.equal(last.turn_id, waiting.turn_id);
    assert.equal(textOf(events), 'Answer: yes please');
    const ids = events.map((e) => e.event_id);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('ends at a resync whose re-read finds the turn already over (its terminal event was missed)', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot', input: `over before you look ${NODE_FILLING_INPUT}` });
    const first = direct.sessions.events(session.id, { untilInputId: session.yuxi.receipt!.input_id!, signal: AbortSignal.timeout(LIMIT_MS) });
    await collect(first);
    assert.equal(first.ended, 'turn_terminal');
    // The window moves on for real (see moveReplayWindow): a subscription from the start finds it moved.
    await moveReplayWindow(session.id);

    const stream = direct.sessions.events(session.id, { untilTurnId: first.turnId!, signal: AbortSignal.timeout(LIMIT_MS) });
    const events = await collect(stream);
    assert.deepEqual(
      events.map((e) => e.type),
      ['yuxi.session.resync'],
    );
    assert.equal(stream.ended, 'turn_terminal');
    assert.equal(stream.lastResync?.turn?.status, 'completed');
    const answer = stream.lastResync?.items.find((item) => JSON.stringify(item).includes('Echo: over before you look'));
    assert.ok(answer, 'the result is in the items read back');
  });

  it('waits out a 429 (stream cap) for its Retry-After, then streams', async () => {
    const { key } = await newProductUser('sdk capped', { max_streams: 1 });
    const client = through(proxy, { apiKey: key.secret });
    const session = await client.sessions.create({ agent_id: 'default-chatbot', input: 'capped' });
    let holder: RawStream | null = await openRawStream({ name: 'sdk capped', token: key.secret }, session.id);
    try {
      assert.equal(holder.status, 200);
      const opened = proxy.requestsTo('GET', EVENTS_PATH).length;
      const refused = proxy.answerTo((r) => r.method === 'GET' && EVENTS_PATH.test(r.path) && r.status === 429);
      const stream = client.sessions.events(session.id, { untilInputId: session.yuxi.receipt!.input_id!, signal: AbortSignal.timeout(LIMIT_MS) });
      const done = collect(stream);
      await refused;
      holder.close();
      holder = null;
      const events = await done;
      assert.equal(events.at(-1)?.type, 'agent.session.turn.completed');
      const statuses = proxy.requestsTo('GET', EVENTS_PATH).slice(opened).map((r) => r.status);
      assert.equal(statuses[0], 429);
      assert.equal(statuses.at(-1), 200);
    } finally {
      holder?.close();
    }
  });
});
