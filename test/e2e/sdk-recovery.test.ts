import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { AgentsApiError, AgentsClient, AgentsConnectionError, type MessageInput, type SessionEvent } from '#libs/sdk';
import { env } from '../support/env.js';
import { collect, direct, EVENTS_PATH, inputIds, isPost, LIMIT_MS, RECEIPT_PATH, textOf, through } from '../support/sdk.js';
import { moveReplayWindow, NODE_FILLING_INPUT } from '../support/replay-window.js';
import { TcpProxy } from '../support/tcp-proxy.js';

// The SDK's recovery rules at their edges: what counts as a lost connection (and what is a
// mistake to throw), where the resume cursor stands, what a followed turn shows, and what a lost
// answer may be recovered with.

/** A session whose first turn (on `input`) is over, and that turn. */
async function sessionWithTurn(input: string): Promise<{ sessionId: string; turnId: string }> {
  const session = await direct.sessions.create({ agent_id: 'default-chatbot', input });
  const first = direct.sessions.events(session.id, { untilInputId: session.yuxi.receipt!.input_id!, signal: AbortSignal.timeout(LIMIT_MS) });
  await collect(first);
  assert.equal(first.ended, 'turn_terminal');
  return { sessionId: session.id, turnId: first.turnId! };
}

class ConsumerFailure extends Error {}

describe('sdk: recovery at the edges', () => {
  let proxy: TcpProxy;

  before(async () => {
    proxy = await TcpProxy.start(env.apiUrl);
  });
  after(async () => {
    await proxy.close();
  });

  it('ends a followed turn that is over when the session stream expired altogether (resync, re-read, end)', async () => {
    // A turn that waits for an answer, then is cancelled through the replica whose replay TTL is
    // 10 s (EVENTS_REPLAY_TTL_SECONDS): the turn ends there, in the api, so its events are the
    // session's last publish and the stream (and its sequence number) expire for real.
    const session = await direct.sessions.create({ agent_id: 'default-chatbot', input: 'before the stream expired [[ask:Proceed?]]' });
    const waiting = direct.sessions.events(session.id, { signal: AbortSignal.timeout(LIMIT_MS) });
    let turnId = '';
    for await (const event of waiting) {
      if (event.type === 'yuxi.session.turn.waiting') {
        turnId = event.turn_id;
        break;
      }
    }
    assert.ok(turnId, 'the turn waits for an answer');
    await new AgentsClient({ baseUrl: env.apiUrlShortWindow, apiKey: env.apiKey }).sessions.cancel(session.id, { turn_id: turnId });
    const key = `yuxi:session-events:{${session.id}}`;
    const redis = new Redis(env.redisUrl);
    try {
      // Read only: the stream's TTL runs out.
      for (let i = 0; (await redis.exists(key)) === 1; i += 1) {
        assert.ok(i < 300, 'the session\'s stream expired within 30 s');
        await sleep(100);
      }
    } finally {
      redis.disconnect();
    }

    const stream = direct.sessions.events(session.id, { untilTurnId: turnId, signal: AbortSignal.timeout(LIMIT_MS) });
    const events = await collect(stream);

    assert.deepEqual(
      events.map((e) => e.type),
      ['yuxi.session.resync'],
    );
    assert.equal(stream.ended, 'turn_terminal');
    assert.equal(stream.lastResync?.turn?.status, 'cancelled');
    assert.ok(
      stream.lastResync?.items.some((item) => JSON.stringify(item).includes('before the stream expired')),
      'the turn\'s items are read back',
    );
  });

  it('ends the iteration with what onResync throws, a TypeError too, without reconnecting', async () => {
    const { sessionId, turnId } = await sessionWithTurn(`resync handler fails ${NODE_FILLING_INPUT}`);
    // The window no longer starts at the session's first event (moved for real, see
    // moveReplayWindow): a subscription from the start resyncs.
    await moveReplayWindow(sessionId);
    const opened = proxy.requestsTo('GET', EVENTS_PATH).length;
    const bug = new TypeError("Cannot read properties of undefined (reading 'render')");

    const stream = through(proxy).sessions.events(sessionId, {
      untilTurnId: turnId,
      reconnectDelayMs: 20,
      onResync: () => {
        throw bug;
      },
      signal: AbortSignal.timeout(LIMIT_MS),
    });
    await assert.rejects(collect(stream), (error: unknown) => error === bug);
    assert.equal(proxy.requestsTo('GET', EVENTS_PATH).length - opened, 1, 'one subscription: the error was not taken for a cut connection');
    assert.equal(stream.lastEventId, undefined, 'the resync was not handled: the cursor did not move past it');
  });

  it('throws a request that cannot be built (an X-End-User-Id that is not Latin-1) at once, never as a lost answer', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const client = through(proxy, { endUserId: '终端用户' });
    const seen = proxy.requests.length;

    await assert.rejects(client.sessions.sendMessage(session.id, 'never sent'), (error: unknown) => {
      assert.ok(error instanceof TypeError, `a TypeError, not ${String(error)}`);
      assert.ok(!(error instanceof AgentsConnectionError));
      return true;
    });
    await assert.rejects(collect(client.sessions.events(session.id, { reconnectDelayMs: 20, signal: AbortSignal.timeout(LIMIT_MS) })), (error: unknown) => {
      assert.ok(error instanceof TypeError, `a TypeError, not ${String(error)}`);
      return true;
    });
    assert.equal(proxy.requests.length, seen, 'nothing was sent, nothing retried');
    assert.deepEqual(await inputIds(session.id), []);
  });

  it('keeps as lastEventId the last event the consumer finished with: a stream resumed from it delivers the event the consumer failed on', async () => {
    const { sessionId } = await sessionWithTurn('a consumer that fails on its third event');
    const failing = direct.sessions.events(sessionId, { signal: AbortSignal.timeout(LIMIT_MS) });
    const delivered: SessionEvent[] = [];
    await assert.rejects(
      collect(failing, (event, index) => {
        delivered.push(event);
        if (index === 2) throw new ConsumerFailure('could not store the event');
      }),
      ConsumerFailure,
    );
    assert.equal(delivered.length, 3);
    assert.ok(failing.lastEventId, 'the first two events were handled');

    const resumed = direct.sessions.events(sessionId, { lastEventId: failing.lastEventId, signal: AbortSignal.timeout(LIMIT_MS) });
    let first: SessionEvent | undefined;
    for await (const event of resumed) {
      first = event;
      break;
    }
    assert.equal(first?.event_id, delivered[2]!.event_id, 'the event the consumer failed on comes again');
  });

  it('following a turn on a session with history yields that turn and what concerns it, nothing of earlier turns', async () => {
    const { sessionId, turnId: earlier } = await sessionWithTurn('the earlier turn');
    const receipt = await direct.sessions.sendMessage(sessionId, 'the followed turn');

    // By input (the README's way), from the start of the retained history.
    const byInput = direct.sessions.events(sessionId, { untilInputId: receipt.input_id!, signal: AbortSignal.timeout(LIMIT_MS) });
    const events = await collect(byInput);
    const turnId = byInput.turnId!;
    assert.notEqual(turnId, earlier);
    assert.equal(textOf(events), 'Echo: the followed turn', 'no text of the earlier turn');
    assert.equal(events[0]!.type, 'yuxi.session.event.accepted', 'the input\'s acceptance comes first');
    for (const event of events) {
      if ('turn_id' in event) assert.equal(event.turn_id, turnId, `${event.type} is the followed turn's`);
      else if (event.type === 'yuxi.session.event.accepted') assert.equal(event.receipt.input_id, receipt.input_id);
      else assert.fail(`${event.type} does not concern the followed turn`);
    }
    assert.equal(events.at(-1)?.type, 'agent.session.turn.completed');

    // By turn: the same events, less the input's acceptance (it names no turn).
    const byTurn = direct.sessions.events(sessionId, { untilTurnId: turnId, signal: AbortSignal.timeout(LIMIT_MS) });
    assert.deepEqual(
      (await collect(byTurn)).map((e) => e.event_id),
      events.filter((e) => 'turn_id' in e).map((e) => e.event_id),
    );

    // Skipped events move the cursor too: a consumer failing on the first event it gets leaves the
    // cursor on the skipped event before it, so a stream resumed there starts with that event.
    const failing = direct.sessions.events(sessionId, { untilInputId: receipt.input_id!, signal: AbortSignal.timeout(LIMIT_MS) });
    await assert.rejects(
      collect(failing, () => {
        throw new ConsumerFailure('could not show it');
      }),
      ConsumerFailure,
    );
    assert.ok(failing.lastEventId, 'the earlier turn\'s events, skipped, moved the cursor');
    const resumed = direct.sessions.events(sessionId, { lastEventId: failing.lastEventId, signal: AbortSignal.timeout(LIMIT_MS) });
    for await (const event of resumed) {
      assert.equal(event.event_id, events[0]!.event_id);
      break;
    }
  });

  it('with the caller\'s own key, a receipt found after a lost answer is not trusted: the event is sent again and the server answers', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const client = through(proxy);
    const key = `caller-key-${randomUUID()}`;
    const posts = proxy.requestsTo('POST', EVENTS_PATH).length;
    const lookups = proxy.requestsTo('GET', RECEIPT_PATH).length;
    proxy.failNext(isPost(EVENTS_PATH), 'drop-response');

    const receipt = await client.sessions.sendMessage(session.id, 'my own key', { idempotencyKey: key });

    assert.deepEqual(
      proxy.requestsTo('POST', EVENTS_PATH).slice(posts).map((r) => [r.status, r.headers['idempotency-key']]),
      [
        [null, key],
        [202, key],
      ],
      'sent again with the same key after the lookup',
    );
    assert.deepEqual(
      proxy.requestsTo('GET', RECEIPT_PATH).slice(lookups).map((r) => r.status),
      [200],
    );
    assert.deepEqual(receipt, await direct.sessions.receipt(session.id, key), 'the stored receipt, replayed');
    assert.deepEqual(await inputIds(session.id), [receipt.input_id], 'exactly one input');
  });

  it('with the caller\'s own key reused for another intent, a lost answer ends in 409, not in the other submission\'s receipt', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const key = `caller-key-${randomUUID()}`;
    const first = await direct.sessions.sendMessage(session.id, 'the first intent', { idempotencyKey: key });
    proxy.failNext(isPost(EVENTS_PATH), 'drop-response');

    await assert.rejects(through(proxy).sessions.sendMessage(session.id, 'another intent', { idempotencyKey: key }), (error: unknown) => {
      assert.ok(error instanceof AgentsApiError, String(error));
      assert.equal(error.status, 409);
      assert.equal(error.code, 'idempotency_conflict');
      return true;
    });
    assert.deepEqual(await inputIds(session.id), [first.input_id]);
  });

  it('sends every attempt of a call with the body as it was at the call: changes to the caller\'s object meanwhile do not travel', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const client = through(proxy);
    const posts = proxy.requestsTo('POST', EVENTS_PATH).length;
    proxy.failNext(isPost(EVENTS_PATH), 'drop-request');
    const input = [{ role: 'user', content: 'the words as called' }] satisfies MessageInput;

    const pending = client.sessions.sendMessage(session.id, input);
    // While the first attempt is lost and the retry waits, the caller reuses its object.
    input[0].content = 'words changed afterwards';
    const receipt = await pending;

    assert.deepEqual(
      proxy.requestsTo('POST', EVENTS_PATH).slice(posts).map((r) => r.status),
      [null, 202],
      'the retry is what arrived',
    );
    const detail = JSON.stringify(await direct.sessions.input(session.id, receipt.input_id!));
    assert.ok(detail.includes('the words as called'), detail);
    assert.ok(!detail.includes('changed afterwards'), detail);
  });
});
