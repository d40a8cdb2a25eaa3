import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AgentsApiError, AgentsClient, verifyWebhook, type WebhookPayload } from '#libs/sdk';
import { env } from '../support/env.js';
import { newProductUser, until } from '../support/identity.js';
import { collect, direct, inputIds, LIMIT_MS, through } from '../support/sdk.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';


// The typed client's requests against the real stack: sessions, cooperation trees, projects,
// webhook endpoints, the admin surface and its typed errors. Its streams are in sdk-streams.test.ts.
describe('sdk: the typed client against the real stack', () => {
  let proxy: TcpProxy;

  before(async () => {
    proxy = await TcpProxy.start(env.apiUrl);
  });
  after(async () => {
    await proxy.close();
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

  it('forks a session (a lost answer retried under the key it generated makes one fork), and lists its forks', async () => {
    const client = through(proxy);
    const source = await direct.sessions.create({ agent_id: 'default-chatbot', input: 'fork me', title: 'SDK fork source' });
    await collect(direct.sessions.events(source.id, { untilInputId: source.yuxi.receipt!.input_id!, signal: AbortSignal.timeout(LIMIT_MS) }));
    const [turn] = (await direct.sessions.turns(source.id)).data;
    const forkedFrom = (session: { yuxi: object }) => (session.yuxi as { forked_from?: unknown }).forked_from;

    // The first answer is lost after the api made the fork: the retry under the same generated key gets that fork back.
    const isFork = (request: { method: string; path: string }) => request.method === 'POST' && request.path === `/api/v1/agents/sessions/${source.id}/fork`;
    proxy.failNext(isFork, 'drop-response');
    const fork = await client.sessions.fork(source.id, { after_turn_id: turn.id, title: 'SDK fork' });
    const sent = proxy.requests.filter(isFork);
    assert.equal(sent.length, 2, 'sent, answer lost, sent again');
    assert.match(sent[0].headers['idempotency-key'] ?? '', /^sdk-/);
    assert.equal(sent[1].headers['idempotency-key'], sent[0].headers['idempotency-key'], 'the retry sends the same key');
    assert.equal(fork.yuxi.title, 'SDK fork');
    assert.deepEqual(forkedFrom(fork), { session_id: source.id, turn_id: turn.id, position: 'after' });

    // Neither turn id: after the latest finished turn.
    const again = await direct.sessions.fork(source.id);
    assert.deepEqual(forkedFrom(again), { session_id: source.id, turn_id: turn.id, position: 'after' });
    assert.equal(again.yuxi.title, 'SDK fork source', 'the source\'s title when none is given');
    assert.equal(forkedFrom(await direct.sessions.get(source.id)), null, 'the source is no fork');
    const forks = await direct.sessions.list({ forked_from: source.id });
    assert.deepEqual(forks.data.map((s) => s.id).sort(), [fork.id, again.id].sort(), 'one fork per call, the retried one included');
    assert.deepEqual((await direct.sessions.list({ forked_from: fork.id })).data, []);
  });

});
