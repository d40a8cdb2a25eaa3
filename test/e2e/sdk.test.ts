import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AgentsApiError, AgentsClient, type ResyncSnapshot, type SessionEventOf, type SessionEventsOptions, verifyWebhook, type WebhookPayload } from '#libs/sdk';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { newProductUser, openRawStream, type RawStream, until } from '../support/identity.js';
import { assertContiguous, collect, direct, EVENTS_PATH, inputIds, isPost, LIMIT_MS, RECEIPT_PATH, SLOW, textOf, through } from '../support/sdk.js';
import { moveReplayWindow, NODE_FILLING_INPUT } from '../support/replay-window.js';
import { SseStream } from '../support/sse.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';
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

describe('sdk: the typed client against the real stack', () => {
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

  it('compacts a session on request and narrows the compaction event to its typed payload', async () => {
    const session = await direct.sessions.create({ agent_id: 'default-chatbot', input: 'the order is ORD-5' });
    await collect(direct.sessions.events(session.id, { untilInputId: session.yuxi.receipt!.input_id!, signal: AbortSignal.timeout(LIMIT_MS) }));
    const receipt = await direct.sessions.compact(session.id, { instructions: 'Keep order ids.' });
    const events = await collect(direct.sessions.events(session.id, { untilInputId: receipt.input_id!, signal: AbortSignal.timeout(LIMIT_MS) }));
    const completed = events.find((event) => event.type === 'yuxi.session.turn.context_compression' && event.phase === 'completed');
    assert.ok(completed?.type === 'yuxi.session.turn.context_compression', 'the compaction was announced');
    assert.equal(completed.trigger, 'manual');
    assert.equal(completed.item?.type, 'compaction');
    assert.match(completed.item?.summary ?? '', /ORD-5/);
    assert.equal(events.at(-1)?.type, 'agent.session.turn.completed');
  });

  it('lists a cooperation tree, reads its state, stops and continues it, with the new events typed', async () => {
    const root = await direct.sessions.create({ agent_id: 'coordinator', input: '[[tool:create_subagent {"task":"typed","name":"t"}]] [[tool:wait_subagents {}]]' });
    const events = await collect(direct.sessions.events(root.id, { untilInputId: root.yuxi.receipt!.input_id!, signal: AbortSignal.timeout(LIMIT_MS) }));
    const created = events.find((event) => event.type === 'agent.session.subagent.created');
    assert.ok(created?.type === 'agent.session.subagent.created', 'the member was announced');
    assert.equal(created.subagent.name, 't');
    const tree = await direct.sessions.list({ root_session_id: root.id });
    assert.deepEqual(tree.data.map((s) => s.yuxi.depth).sort(), [0, 1]);
    const member = tree.data.find((s) => s.yuxi.depth === 1)!;
    assert.equal(member.yuxi.spawned_by?.turn_id, created.turn_id);
    const state = await direct.sessions.state(member.id);
    assert.equal(state.agent_state.cooperation?.root_session_id, root.id);
    assert.equal((await direct.sessions.stopTree(member.id)).status, 'accepted');
    assert.equal((await direct.sessions.continueTree(root.id)).status, 'accepted');
    assert.equal((await direct.sessions.state(root.id)).agent_state.cooperation?.stopped, false);
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

  it('throws typed errors (404, 422, 409), without retrying them', async () => {
    const client = through(proxy);
    const missing = '00000000-0000-7000-8000-000000000000';
    const before = proxy.requests.length;
    await assert.rejects(client.sessions.get(missing), (error: unknown) => {
      assert.ok(error instanceof AgentsApiError);
      assert.equal(error.status, 404);
      assert.equal(error.code, 'not_found');
      assert.equal(error.retryable, false);
      assert.match(error.requestId ?? '', /\S/);
      return true;
    });
    assert.equal(proxy.requests.length - before, 1, 'a 404 is not retried');

    await assert.rejects(client.sessions.create({ agent_id: 'default-chatbot', title: '' }), (error: unknown) => {
      assert.ok(error instanceof AgentsApiError);
      assert.equal(error.status, 422);
      assert.equal(error.code, 'validation_failed');
      assert.equal(error.type, 'invalid_request');
      assert.match(JSON.stringify(error.details), /title/);
      return true;
    });

    const session = await direct.sessions.create({ agent_id: 'default-chatbot' });
    const key = `sdk-own-key-${randomUUID()}`;
    const first = await client.sessions.sendMessage(session.id, 'first intent', { idempotencyKey: key });
    assert.deepEqual(await client.sessions.sendMessage(session.id, 'first intent', { idempotencyKey: key }), first, 'same key, same intent: the first receipt');
    await assert.rejects(client.sessions.sendMessage(session.id, 'another intent', { idempotencyKey: key }), (error: unknown) => {
      assert.ok(error instanceof AgentsApiError);
      assert.equal(error.status, 409);
      assert.equal(error.code, 'idempotency_conflict');
      return true;
    });
    assert.deepEqual(await inputIds(session.id), [first.input_id]);
  });

  it('manages projects: create, get, list (every page), delete; a session created in one names it', async () => {
    const { key } = await newProductUser('sdk projects');
    const client = new AgentsClient({ baseUrl: env.apiUrl, apiKey: key.secret });
    const created = [await client.projects.create({ name: 'SDK one', description: 'first' }), await client.projects.create({ name: 'SDK two' })];
    assert.equal(created[0]!.object, 'agent.project');
    assert.deepEqual(await client.projects.get(created[0]!.id), created[0]);
    const listed: string[] = [];
    for await (const project of client.projects.listAll({ order: 'asc', limit: 1 })) listed.push(project.id);
    assert.deepEqual(listed, created.map((p) => p.id));
    const session = await client.sessions.create({ agent_id: 'default-chatbot', project_id: created[1]!.id });
    assert.equal(session.yuxi.project_id, created[1]!.id);
    assert.deepEqual(await client.projects.delete(created[1]!.id), { id: created[1]!.id, object: 'agent.project', deleted: true });
    await assert.rejects(client.projects.get(created[1]!.id), (error: unknown) => error instanceof AgentsApiError && error.status === 404 && error.code === 'not_found');
    assert.deepEqual(
      (await client.projects.list()).data.map((p) => p.id),
      [created[0]!.id],
    );
  });

  it('manages webhook endpoints: create, a test event received and verified with verifyWebhook, the delivery log, update, redeliver, rotate, delete', async () => {
    // Its own user: the suite's shared bootstrap user gets no endpoint (its sessions are fanned out to none).
    const { key } = await newProductUser('sdk webhooks');
    const client = new AgentsClient({ baseUrl: env.apiUrl, apiKey: key.secret });
    const receiver = await WebhookReceiver.start();
    try {
      const endpoint = await client.webhooks.create({ url: `${receiver.url}/sdk`, event_types: ['agent.session.turn.completed'], description: 'sdk receiver' });
      assert.equal(endpoint.object, 'webhook_endpoint');
      assert.match(endpoint.secret, /^whsec_/);
      const { secret, ...shown } = endpoint;
      assert.deepEqual(await client.webhooks.get(endpoint.id), shown, 'a read shows everything but the secret');
      assert.deepEqual((await client.webhooks.list()).data.map((e) => e.id), [endpoint.id]);

      const sent = await client.webhooks.test(endpoint.id);
      assert.deepEqual([sent.event_type, sent.endpoint_id, sent.status], ['webhook.test', endpoint.id, 'pending']);
      await receiver.waitFor('the test event', () => receiver.at('/sdk').length === 1);
      const [hook] = receiver.at('/sdk');
      const payload = await verifyWebhook<WebhookPayload>(secret, hook!.headers, hook!.body);
      assert.ok(payload.type === 'webhook.test', `a test event: ${hook!.body}`);
      assert.equal(payload.data.endpoint_id, endpoint.id);
      assert.equal(payload.id, sent.event_id);
      assert.equal(hook!.headers['webhook-id'], sent.event_id);
      await assert.rejects(verifyWebhook(secret, hook!.headers, hook!.body.replace('webhook.test', 'webhook.tset')), { name: 'WebhookVerificationError', reason: 'bad_signature' });

      const logged = await until(async () => {
        const log = await client.webhooks.deliveries(endpoint.id, { limit: 5 });
        return log.data[0]?.status === 'succeeded' ? log.data : undefined;
      });
      assert.ok(logged, 'the delivery log shows the test delivered');
      assert.deepEqual(logged.map((d) => [d.id, d.event_id, d.attempts.map((a) => [a.attempt, a.status_code, a.outcome])]), [[sent.id, sent.event_id, [[1, 200, 'succeeded']]]]);

      const updated = await client.webhooks.update(endpoint.id, { description: 'renamed', event_types: null });
      assert.deepEqual([updated.description, updated.event_types, updated.enabled], ['renamed', null, true]);
      const again = await client.webhooks.redeliver(endpoint.id, sent.id);
      assert.deepEqual([again.redelivery_of, again.event_id], [sent.id, sent.event_id]);
      await receiver.waitFor('the redelivery', () => receiver.at('/sdk').length === 2);
      assert.equal(receiver.at('/sdk')[1]!.headers['webhook-id'], sent.event_id, 'a redelivery repeats the webhook-id');
      const all: string[] = [];
      for await (const delivery of client.webhooks.allDeliveries(endpoint.id, { limit: 1 })) all.push(delivery.id);
      assert.deepEqual(all.sort(), [sent.id, again.id].sort());

      const rotated = await client.webhooks.rotateSecret(endpoint.id);
      assert.notEqual(rotated.secret, secret);
      assert.equal(typeof rotated.previous_secret_expires_at, 'number');

      assert.deepEqual(await client.webhooks.delete(endpoint.id), { id: endpoint.id, object: 'webhook_endpoint', deleted: true });
      await assert.rejects(client.webhooks.get(endpoint.id), (error: unknown) => error instanceof AgentsApiError && error.status === 404 && error.code === 'not_found');
      assert.deepEqual((await client.webhooks.list()).data, []);
    } finally {
      await receiver.close();
    }
  });

  it('the admin surface: me, roles, a cross-owner search, timeline, an operator\'s answer, the inbox, queues, keys and the audit', async () => {
    const admin = new AgentsClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });
    const owner = await newProductUser('sdk owner');
    const op = await newProductUser('sdk operator');
    assert.equal((await admin.admin.setUserRole(op.userId, 'operator')).role, 'operator');
    const operator = new AgentsClient({ baseUrl: env.apiUrl, apiKey: op.key.secret });
    assert.deepEqual([(await operator.me()).role, (await operator.me()).user_id], ['operator', op.userId]);

    const mine = new AgentsClient({ baseUrl: env.apiUrl, apiKey: owner.key.secret });
    const session = await mine.sessions.create({ agent_id: 'default-chatbot', input: 'sdk admin [[ask:Colour?]]' });
    const waitpoint = await until(async () => (await operator.admin.waitpoints({ kind: 'question', limit: 100 })).data.find((w) => w.session_id === session.id));
    assert.ok(waitpoint, 'the question in the inbox');
    assert.deepEqual((await operator.admin.sessions.search({ owner_id: owner.userId })).data.map((s) => s.id), [session.id]);
    assert.equal((await operator.admin.sessions.get(session.id)).id, session.id);
    const question = waitpoint.questions![0]!;
    const receipt = await operator.admin.sessions.submitEvent(session.id, { type: 'yuxi.session.input.resume', turn_id: waitpoint.turn_id, waitpoint_id: waitpoint.id, response: { type: 'answer', answers: [{ question_id: question.question_id, answer: 'blue' }] } });
    assert.equal(receipt.session_id, session.id);
    assert.ok(await until(async () => ((await mine.sessions.get(session.id)).status === 'completed' ? true : undefined)), 'the answered turn completes');
    const timeline = await operator.admin.sessions.timeline(session.id, { order: 'asc' });
    assert.ok(timeline.data[0]!.runs.some((run) => run.steps.some((step) => step.kind === 'waitpoint')), 'the answer is on the timeline');
    assert.equal(typeof (await operator.admin.queues()).workers, 'object');
    assert.equal((await operator.admin.sessions.bulkCancel({ filter: { owner_id: owner.userId }, dry_run: true })).dry_run, true);
    await assert.rejects(operator.admin.listApiKeys().then(() => operator.admin.audit()), (error: unknown) => error instanceof AgentsApiError && error.status === 403);

    const key = await admin.admin.createApiKey({ name: 'sdk admin key', access: 'agents' });
    assert.ok(key.secret.length > 20);
    assert.ok((await admin.admin.listApiKeys()).data.some((k) => k.id === key.id));
    await admin.admin.revokeApiKey(key.id);
    const audit = await admin.admin.audit({ limit: 20 });
    assert.ok(audit.data.some((entry) => entry.action === 'api_key.revoked' && entry.target.id === key.id));
    assert.ok(audit.data.some((entry) => entry.action === 'session.operator_event' && entry.target.id === session.id));
  });

  it('labels, updates conditionally and deletes sessions: metadata filter, ifMatch (412 revision_mismatch), delete twice', async () => {
    const { key } = await newProductUser('sdk hygiene');
    const client = new AgentsClient({ baseUrl: env.apiUrl, apiKey: key.secret });
    const labelled = await client.sessions.create({ agent_id: 'default-chatbot', yuxi: { metadata: { team: 'sdk', tier: 'gold' } } });
    await client.sessions.create({ agent_id: 'default-chatbot', yuxi: { metadata: { team: 'sdk' } } });
    assert.deepEqual(labelled.yuxi.metadata, { team: 'sdk', tier: 'gold' });
    assert.equal(labelled.yuxi.revision, 1);
    const gold = await client.sessions.list({ metadata: { team: 'sdk', tier: 'gold' } });
    assert.deepEqual(gold.data.map((s) => s.id), [labelled.id]);

    const renamed = await client.sessions.update(labelled.id, { yuxi: { title: 'Renamed' } }, { ifMatch: 1 });
    assert.equal(renamed.yuxi.revision, 2);
    await assert.rejects(
      client.sessions.update(labelled.id, { yuxi: { title: 'Stale' } }, { ifMatch: 1 }),
      (error: unknown) => error instanceof AgentsApiError && error.status === 412 && error.code === 'revision_mismatch',
    );

    const deleted = await client.sessions.delete(labelled.id);
    assert.deepEqual(deleted, { id: labelled.id, object: 'agent.session', deleted: true });
    assert.deepEqual(await client.sessions.delete(labelled.id), deleted, 'a retried delete gets the same answer');
    await assert.rejects(client.sessions.get(labelled.id), (error: unknown) => error instanceof AgentsApiError && error.status === 404);
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
