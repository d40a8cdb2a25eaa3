import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyWebhook } from '#libs/sdk';
import { WEBHOOK_EVENT_TYPES } from '#libs/webhooks';
import { API, newKey } from '../support/http.js';
import { call, createSessionAs, newProductUser, postEventAs, sendMessageAs } from '../support/identity.js';
import { OpenApiSchemas } from '../support/openapi-schema.js';
import { type ReceivedHook, WebhookReceiver } from '../support/webhook-receiver.js';

const HOOKS = `${API}/webhooks`;
const SCHEMAS = '#/components/schemas/';

function headersOf(hook: ReceivedHook): Record<string, string> {
  return { 'webhook-id': String(hook.headers['webhook-id']), 'webhook-timestamp': String(hook.headers['webhook-timestamp']), 'webhook-signature': String(hook.headers['webhook-signature']) };
}

// The webhook payloads are documented (`x-webhooks`, one schema per event type under
// `WebhookPayload`), and what the stack really sends conforms: a product user's sessions of every
// kind, delivered to a local receiver, each body checked against the schema of its type.
describe('webhooks: the x-webhooks of the OpenAPI document', () => {
  let schemas: OpenApiSchemas;
  let hooks: Record<string, { post: any }>;
  let receiver: WebhookReceiver;

  before(async () => {
    schemas = await OpenApiSchemas.live();
    hooks = schemas.document['x-webhooks'];
    receiver = await WebhookReceiver.start();
  });
  after(() => receiver.close());

  /** The payload schema of an event type's x-webhooks entry. */
  function payloadSchema(type: string): { $ref: string } {
    const schema = hooks[type]?.post?.requestBody?.content?.['application/json']?.schema;
    assert.ok(schema?.$ref?.startsWith(SCHEMAS), `${type}: the request body references a component schema`);
    return schema;
  }

  it('has one POST per webhook event type: the three signature headers, the payload schema, what each answer means', () => {
    assert.deepEqual(Object.keys(hooks).sort(), Object.keys(WEBHOOK_EVENT_TYPES).sort());
    const mapping = schemas.document.components.schemas.WebhookPayload.discriminator.mapping;
    assert.deepEqual(Object.keys(mapping).sort(), Object.keys(WEBHOOK_EVENT_TYPES).sort(), 'WebhookPayload maps every type to its schema');
    const operationIds = new Set<string>();
    for (const type of Object.keys(WEBHOOK_EVENT_TYPES)) {
      const post = hooks[type]!.post;
      assert.ok(post.operationId && post.summary && post.description, `${type}: operationId, summary, description`);
      operationIds.add(post.operationId);
      assert.deepEqual(post.tags, ['webhooks']);
      assert.deepEqual(post.security, [], `${type}: authenticated by its signature, not a credential`);
      assert.match(post.description, /Retry-After/);
      assert.match(post.description, /deduplicate on it/);
      assert.deepEqual(
        post.parameters.map((p: any) => [p.name, p.in, p.required]),
        [
          ['webhook-id', 'header', true],
          ['webhook-timestamp', 'header', true],
          ['webhook-signature', 'header', true],
        ],
      );
      assert.equal(payloadSchema(type).$ref, mapping[type], `${type}: the body's schema is the member WebhookPayload maps the type to`);
      assert.equal(post.requestBody.required, true);
      assert.deepEqual(Object.keys(post.responses).sort(), ['2XX', '410', 'default']);
      assert.ok(post.responses.default.headers['Retry-After'], 'a failure may say when to retry');
    }
    assert.equal(operationIds.size, Object.keys(WEBHOOK_EVENT_TYPES).length, 'operation ids are unique');
  });

  it('documents examples that conform to their schemas and carry signatures that verify', async () => {
    const created = schemas.document.paths['/api/v1/agents/webhooks'].post.responses['201'].content['application/json'].example;
    for (const type of Object.keys(WEBHOOK_EVENT_TYPES)) {
      const post = hooks[type]!.post;
      const examples = Object.values(post.requestBody.content['application/json'].examples) as { value: any }[];
      assert.ok(examples.length > 0, `${type} has an example`);
      for (const { value } of examples) {
        assert.equal(value.type, type);
        assert.deepEqual(schemas.problemsFor(payloadSchema(type), value), [], `${type}: ${JSON.stringify(value)}`);
        assert.deepEqual(schemas.problems('WebhookPayload', value), [], `${type} is a WebhookPayload`);
        for (const other of Object.keys(WEBHOOK_EVENT_TYPES).filter((t) => t !== type)) {
          assert.notDeepEqual(schemas.problemsFor(payloadSchema(other), value), [], `${type}'s example is not a ${other}`);
        }
      }
      // The header examples sign the first example with the create example's secret.
      const headers = Object.fromEntries(post.parameters.map((p: any) => [p.name, String(p.schema.example)]));
      const body = JSON.stringify(examples[0]!.value);
      const now = () => Number(headers['webhook-timestamp']) * 1000;
      assert.deepEqual(await verifyWebhook(created.secret, headers, body, { now }), examples[0]!.value, `${type}: the example signature verifies`);
      assert.equal(headers['webhook-id'], examples[0]!.value.id);
    }
  });

  it('every event type the stack delivers conforms to its x-webhooks schema, in order per session', async () => {
    const { caller } = await newProductUser('webhook payloads');
    const endpoint = await call(caller, HOOKS, { body: { url: `${receiver.url}/payloads`, description: 'every type' } });
    assert.equal(endpoint.status, 201, endpoint.text);
    const { id: endpointId, secret } = endpoint.body;

    // Completed, compacted, then failed, queued one after the other in one session.
    const chat = await createSessionAs(caller, 'the ticket is T-1');
    assert.equal((await postEventAs(caller, chat.id, { type: 'yuxi.session.input.compact' })).status, 202);
    assert.equal((await sendMessageAs(caller, chat.id, 'no luck [[fail:model_bad_request]]')).status, 202);
    // A question, then the waiting turn cancelled.
    const asking = await createSessionAs(caller, '[[ask:Which colour?]]');
    await receiver.waitFor('the waiting turn', () => received().some((h) => h.json?.type === 'yuxi.session.turn.waiting'), 30_000);
    assert.equal((await postEventAs(caller, asking.id, { type: 'agent.session.input.cancel' })).status, 202);
    // A session whose own budget allows one model call and fails past it: the second turn reaches it.
    const budgeted = await call(caller, `${API}/sessions`, {
      body: { agent_id: 'default-chatbot', input: 'one call', yuxi: { budget: { limits: { model_calls: 1 }, on_exceeded: 'fail' } } },
      idempotencyKey: newKey('create'),
    });
    assert.equal(budgeted.status, 201, budgeted.text);
    assert.equal((await sendMessageAs(caller, budgeted.body.id, 'one more')).status, 202);
    // A coordinator creating a member.
    await createSessionAs(caller, '[[tool:create_subagent {"task":"hi","name":"m"}]] [[tool:wait_subagents {}]]', newKey('create'), 'coordinator');
    // The test send.
    assert.equal((await call(caller, `${HOOKS}/${endpointId}/test`, { method: 'POST' })).status, 202);
    // An automation whose target session is gone: its run fails and pauses it.
    const target = await createSessionAs(caller);
    const automation = await call(caller, `${API}/automations`, {
      body: { name: 'gone target', type: 'periodic', expression: '0 0 1 1 *', timezone: 'UTC', target: { type: 'existing_session', session_id: target.id, instructions: 'hi' } },
      idempotencyKey: newKey('automation'),
    });
    assert.equal(automation.status, 201, automation.text);
    assert.equal((await call(caller, `${API}/sessions/${target.id}`, { method: 'DELETE' })).status, 200);
    assert.equal((await call(caller, `${API}/automations/${automation.body.id}/invocations`, { method: 'POST', idempotencyKey: newKey('run-now') })).status, 201);

    const types = Object.keys(WEBHOOK_EVENT_TYPES);
    await receiver.waitFor('every event type', () => types.every((type) => received().some((h) => h.json?.type === type)), 45_000);

    for (const hook of received()) {
      const payload = hook.json;
      const context = `${payload.type}: ${hook.body}`;
      assert.deepEqual(schemas.problemsFor(payloadSchema(payload.type), payload), [], context);
      assert.deepEqual(schemas.problems('WebhookPayload', payload), [], `WebhookPayload: ${context}`);
      assert.deepEqual(await verifyWebhook(secret, headersOf(hook), hook.body), payload);
      assert.equal(hook.headers['webhook-id'], payload.id);
    }
    const first = (type: string, sessionId?: string): any => received().find((h) => h.json.type === type && (!sessionId || h.json.data.session_id === sessionId))!.json;
    assert.equal(first('agent.session.turn.failed', chat.id).data.error_code, 'model_bad_request');
    assert.equal(first('yuxi.session.turn.context_compression', chat.id).data.status, 'completed');
    assert.equal(first('yuxi.session.turn.waiting', asking.id).data.waitpoint_kind, 'question');
    assert.equal(first('agent.session.turn.cancelled', asking.id).data.status, 'cancelled');
    assert.equal(typeof first('agent.session.subagent.created').data.subagent_id, 'string');
    const reached = first('yuxi.session.budget.reached', budgeted.body.id).data;
    assert.deepEqual([reached.scope, reached.limit, reached.limit_value, reached.spent, reached.on_exceeded], [{ kind: 'session', id: budgeted.body.id }, 'model_calls', 1, 1, 'fail']);
    assert.deepEqual(first('webhook.test').data, { endpoint_id: endpointId });
    assert.equal(first('webhook.test').yuxi, undefined);
    for (const type of ['agent.automation.invocation.failed', 'yuxi.automation.paused']) {
      assert.equal(first(type).data.automation_id, automation.body.id, type);
      assert.equal(first(type).data.pause_reason, 'target_session_deleted', type);
      assert.equal(first(type).yuxi, undefined, `${type} belongs to no session`);
    }

    // Per session, in the order of the session's events.
    const bySession = new Map<string, number[]>();
    for (const hook of received()) if (hook.json.data.session_id) bySession.set(hook.json.data.session_id, [...(bySession.get(hook.json.data.session_id) ?? []), hook.json.yuxi.seq]);
    for (const [sessionId, seqs] of bySession) assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), `session ${sessionId} in order`);
    assert.deepEqual(
      received()
        .filter((h) => h.json.data.session_id === chat.id)
        .map((h) => h.json.type),
      ['agent.session.created', 'agent.session.turn.completed', 'yuxi.session.turn.context_compression', 'agent.session.turn.completed', 'agent.session.turn.failed'],
    );
  });

  function received(): ReceivedHook[] {
    return receiver.at('/payloads');
  }
});
