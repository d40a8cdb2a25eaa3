import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { API, http } from '../support/http.js';

// The official `openai` SDK (the pinned version) as a client of this server, used as its README
// says: baseURL = origin + /api/v1, an Idempotency-Key on every create and submit.

/** How long a wait on the stream may take before the test fails (a bound, not a timing assertion). */
const WAIT_MS = 60_000;

const client = new OpenAI({ apiKey: env.apiKey, baseURL: `${env.apiUrl}/api/v1`, maxRetries: 0 });
const sessions = client.beta.agents.sessions;

type AnyEvent = { type: string; turn_id?: string; [key: string]: any };

/** Reads the session's stream with the SDK's own parser (from the start of the replay window) until `done` holds for an event; returns what it read. */
async function readUntil(sessionId: string, done: (event: AnyEvent) => boolean): Promise<AnyEvent[]> {
  const stream = await sessions.events.stream(sessionId, { signal: AbortSignal.timeout(WAIT_MS) });
  const events: AnyEvent[] = [];
  for await (const event of stream) {
    events.push(event as AnyEvent);
    if (done(event as AnyEvent)) return events;
  }
  throw new Error(`the stream ended before the awaited event: ${events.map((e) => e.type).join(', ')}`);
}

const turnEnded = (event: AnyEvent): boolean => ['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled'].includes(event.type);

function textOf(events: AnyEvent[]): string {
  return events.filter((e) => e.type === 'agent.session.turn.output_text.delta').map((e) => e.delta as string).join('');
}

/** The code of our error body as the SDK's APIError exposes it. */
function refused(status: number, code: string) {
  return (error: unknown): boolean => {
    assert.ok(error instanceof OpenAI.APIError, `an APIError, got ${String(error)}`);
    assert.equal(error.status, status, JSON.stringify(error.error));
    assert.equal((error.error as { code?: string } | undefined)?.code, code, JSON.stringify(error.error));
    return true;
  };
}

/** A create's key: a per-request header (the SDK's `idempotencyKey` option sends nothing to this client's endpoints). */
function keyed(key: string): { headers: Record<string, string> } {
  return { headers: { 'Idempotency-Key': key } };
}

function message(text: string) {
  return { type: 'agent.session.input.message' as const, input: [{ type: 'message' as const, role: 'user' as const, content: [{ type: 'input_text' as const, text }] }] };
}

describe('openai-sdk: the official OpenAI SDK as a client', () => {
  it('creates a session with environment none and top-level metadata, under the Idempotency-Key rule', async () => {
    const params = { environment: { type: 'none' as const }, agent_id: 'default-chatbot', metadata: { channel: 'sdk' } };
    // Idempotency-Key stays required: the SDK sends one only as a header given with the request.
    await assert.rejects(sessions.create(params), refused(422, 'idempotency_key_required'));

    const key = `sdk-create-${randomUUID()}`;
    const session = await sessions.create(params, keyed(key));
    assert.equal(session.object, 'agent.session');
    assert.deepEqual(session.environment, { type: 'none' });
    assert.deepEqual(session.metadata, { channel: 'sdk' });
    assert.deepEqual((session as unknown as { yuxi: { metadata: object } }).yuxi.metadata, { channel: 'sdk' }, 'one map under two names');
    assert.equal(session.status, 'idle');
    assert.deepEqual(session.required_actions, []);
    assert.equal(session.error, null);
    assert.equal(session.usage, null);

    const replay = await sessions.create(params, keyed(key));
    assert.equal(replay.id, session.id, 'the same key and intent answer the first session');
    // The same map as yuxi.metadata is the same intent; another map under the key is a conflict.
    const same = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', yuxi: { metadata: { channel: 'sdk' } } }, idempotencyKey: key });
    assert.equal(same.body.id, session.id, same.text);
    await assert.rejects(sessions.create({ ...params, metadata: { channel: 'other' } }, keyed(key)), refused(409, 'idempotency_conflict'));

    // An environment hosted elsewhere (self_hosted) is not offered here.
    const selfHosted = { ...params, environment: { type: 'self_hosted' as const, workspace_directory: '/workspace' } };
    await assert.rejects(sessions.create(selfHosted, keyed(randomUUID())), refused(422, 'environment_unavailable'));
    // An upstream field this server does not have is refused by name, never ignored.
    await assert.rejects(sessions.create({ ...params, review: 'auto_review' }, keyed(randomUUID())), (error: unknown) => {
      refused(422, 'validation_failed')(error);
      assert.match(JSON.stringify((error as InstanceType<typeof OpenAI.APIError>).error), /"review"/);
      return true;
    });
    const both = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', metadata: { a: '1' }, yuxi: { metadata: { a: '2' } } }, idempotencyKey: randomUUID() });
    assert.equal(both.status, 422, both.text);
    assert.equal(both.body.error.details.fields[0].field, 'metadata', both.text);
  });

  it('creates a session in an environment hosted by this deployment and reads it back', async () => {
    const session = await sessions.create({ environment: { type: 'openai_hosted', network: { access: 'disabled' } }, agent_id: 'default-chatbot' }, keyed(randomUUID()));
    const read = await sessions.retrieve(session.id);
    for (const environment of [session.environment, read.environment]) {
      assert.equal(environment.type, 'openai_hosted');
      if (environment.type !== 'openai_hosted') continue;
      assert.equal(environment.network.access, 'disabled');
      assert.deepEqual([environment.files, environment.skills, environment.plugins, environment.capability_directories], [[], [], [], []]);
    }
  });

  it('retrieves, updates top-level metadata, lists with auto-pagination and deletes', async () => {
    const tag = randomUUID();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await sessions.create({ environment: { type: 'none' }, agent_id: 'default-chatbot', metadata: { tag } }, keyed(randomUUID()))).id);
    }
    const read = await sessions.retrieve(ids[0]!);
    assert.equal(read.id, ids[0]);

    const updated = await sessions.update(ids[0]!, { metadata: { tag, step: 'updated' } });
    assert.deepEqual(updated.metadata, { tag, step: 'updated' });
    assert.deepEqual((updated as unknown as { yuxi: { metadata: object } }).yuxi.metadata, { tag, step: 'updated' });
    assert.deepEqual((await sessions.retrieve(ids[0]!)).metadata, { tag, step: 'updated' });
    const clash = await http(`${API}/sessions/${ids[0]}`, { body: { metadata: { tag }, yuxi: { metadata: { tag: 'x' } } } });
    assert.equal(clash.status, 422, clash.text);

    // One session a page: the SDK follows `after` to the end, filtered on metadata.
    const listed: string[] = [];
    for await (const session of sessions.list({ limit: 1, order: 'asc', metadata: { tag } })) listed.push(session.id);
    assert.deepEqual(listed, ids);

    const deleted = await sessions.delete(ids[2]!);
    assert.deepEqual({ id: deleted.id, deleted: deleted.deleted }, { id: ids[2], deleted: true });
    await assert.rejects(sessions.retrieve(ids[2]!), refused(404, 'not_found'));
  });

  it('submits messages with its Idempotency-Key param, streams them with its parser, pages items and turns', async () => {
    const session = await sessions.create({ environment: { type: 'none' }, agent_id: 'default-chatbot' }, keyed(randomUUID()));
    await assert.rejects(sessions.events.create(session.id, { events: [message('no key')] }), refused(422, 'idempotency_key_required'));

    const key = `sdk-msg-${randomUUID()}`;
    await sessions.events.create(session.id, { events: [message('first words')], 'Idempotency-Key': key });
    await sessions.events.create(session.id, { events: [message('first words')], 'Idempotency-Key': key });
    await assert.rejects(sessions.events.create(session.id, { events: [message('other words')], 'Idempotency-Key': key }), refused(409, 'idempotency_conflict'));
    const first = await readUntil(session.id, turnEnded);
    assert.equal(first.at(-1)!.type, 'agent.session.turn.completed');
    assert.equal(textOf(first), 'Echo: first words');
    assert.equal(first.filter((e) => e.type === 'agent.session.turn.created').length, 1, 'the replayed submission queued nothing');

    await sessions.events.create(session.id, { events: [message('second words')], 'Idempotency-Key': randomUUID() });
    const both = await readUntil(session.id, (e) => turnEnded(e) && e.turn_id !== first.at(-1)!.turn_id);
    assert.equal(both.filter((e) => e.type === 'agent.session.turn.completed').length, 2);

    const turns: string[] = [];
    for await (const turn of sessions.turns.list(session.id, { limit: 1, order: 'asc' })) turns.push(turn.id);
    assert.equal(turns.length, 2);
    assert.equal((await sessions.turns.retrieve(turns[1]!, { session_id: session.id })).id, turns[1]);

    const items: string[] = [];
    for await (const item of sessions.items.list(session.id, { limit: 1, order: 'asc' })) items.push(item.type);
    assert.deepEqual(items, ['message', 'message', 'message', 'message'], 'each user message and its answer, one a page');
    const turnItems: string[] = [];
    for await (const item of sessions.turns.items.list(turns[1]!, { session_id: session.id, limit: 1, order: 'asc' })) turnItems.push(item.type);
    assert.deepEqual(turnItems, ['message', 'message'], 'the second turn\'s question and answer, one a page');
    assert.equal((await sessions.retrieve(session.id)).status, 'completed', 'a session after a turn shows that turn\'s terminal status');
  });

  it('creates with stream: true and reads the answer from the stream it returns', async () => {
    const stream = await sessions.create({ environment: { type: 'none' }, agent_id: 'default-chatbot', input: 'streamed at once', stream: true }, { ...keyed(randomUUID()), signal: AbortSignal.timeout(WAIT_MS) });
    const events: AnyEvent[] = [];
    for await (const event of stream) {
      events.push(event as AnyEvent);
      if (turnEnded(event as AnyEvent)) break;
    }
    assert.equal(events[0]!.type, 'agent.session.created');
    assert.equal(events.at(-1)!.type, 'agent.session.turn.completed');
    assert.equal(textOf(events), 'Echo: streamed at once');
  });

  it('answers a client tool call from required_actions with agent.session.input.tool_result', async () => {
    const { id: agentId } = await putAgent({
      model: 'scripted:echo',
      tools: [{ type: 'function', name: 'lookup_order', description: 'Look an order up', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } }],
    });
    const session = await sessions.create({ environment: { type: 'none' }, agent_id: agentId, input: '[[tool:lookup_order {"order_id":"A-1042"}]]' }, keyed(randomUUID()));
    await readUntil(session.id, (e) => e.type === 'yuxi.session.turn.waiting');
    const waiting = await sessions.retrieve(session.id);
    assert.equal(waiting.status, 'requires_action');
    assert.equal(waiting.required_actions.length, 1);
    const action = waiting.required_actions[0]!;
    assert.ok(action.type === 'function_call', JSON.stringify(action));
    assert.equal(action.name, 'lookup_order');
    assert.deepEqual(action.arguments, { order_id: 'A-1042' });

    const result = { type: 'agent.session.input.tool_result' as const, turn_id: action.turn_id, call_id: action.call_id, success: true, output: [{ type: 'input_text' as const, text: 'packed' }] };
    const key = randomUUID();
    await sessions.events.create(session.id, { events: [result], 'Idempotency-Key': key });
    await sessions.events.create(session.id, { events: [result], 'Idempotency-Key': key });
    const events = await readUntil(session.id, turnEnded);
    assert.equal(events.at(-1)!.type, 'agent.session.turn.completed');
    assert.match(textOf(events), /Tool lookup_order returned: packed/);
    const done = await sessions.retrieve(session.id);
    assert.deepEqual(done.required_actions, []);
    const outputs: unknown[] = [];
    for await (const item of sessions.items.list(session.id, { order: 'asc' })) if (item.type === 'function_call_output') outputs.push((item as { output?: unknown }).output);
    assert.deepEqual(outputs, ['packed']);
  });

  it('decides an approval from required_actions with agent.session.input.mcp_approval_request_result', async () => {
    const { id: agentId } = await putAgent({ model: 'scripted:echo', tools: [{ type: 'builtin', name: 'calculator', requires_approval: true }] });
    const session = await sessions.create({ environment: { type: 'none' }, agent_id: agentId, input: '[[tool:calculator {"expression":"6*7"}]]' }, keyed(randomUUID()));
    await readUntil(session.id, (e) => e.type === 'yuxi.session.turn.waiting');
    const waiting = await sessions.retrieve(session.id);
    const action = waiting.required_actions[0]!;
    assert.ok(action.type === 'mcp_approval_request', JSON.stringify(action));
    assert.equal(action.request.name, 'calculator');
    assert.deepEqual(action.request.arguments, { expression: '6*7' });

    const decide = (requestId: string) => ({ type: 'agent.session.input.mcp_approval_request_result' as const, request_id: requestId, response: { type: 'mcp_tool_call' as const, decision: 'approve' as const } });
    await assert.rejects(sessions.events.create(session.id, { events: [decide('not-a-request')], 'Idempotency-Key': randomUUID() }), refused(422, 'validation_failed'));
    await sessions.events.create(session.id, { events: [decide(action.request_id)], 'Idempotency-Key': randomUUID() });
    const events = await readUntil(session.id, turnEnded);
    assert.equal(events.at(-1)!.type, 'agent.session.turn.completed');
    assert.match(textOf(events), /42/);
    assert.equal((await sessions.retrieve(session.id)).status, 'completed');
  });

  it('cancels a running turn with agent.session.input.cancel; the session shows cancelled', async () => {
    const session = await sessions.create({ environment: { type: 'none' }, agent_id: 'default-chatbot', input: '[[delay:200]] [[words:200]]' }, keyed(randomUUID()));
    await readUntil(session.id, (e) => e.type === 'agent.session.turn.output_text.delta');
    await sessions.events.create(session.id, { events: [{ type: 'agent.session.input.cancel' }], 'Idempotency-Key': randomUUID() });
    const events = await readUntil(session.id, turnEnded);
    assert.equal(events.at(-1)!.type, 'agent.session.turn.cancelled');
    assert.equal((await sessions.retrieve(session.id)).status, 'cancelled');
  });

  it('works with the API root that npm start prints as its base URL', async () => {
    const atRoot = new OpenAI({ apiKey: env.apiKey, baseURL: `${env.apiUrl}/api/v1/agents`, maxRetries: 0 });
    const session = await atRoot.beta.agents.sessions.create({ environment: { type: 'none' }, agent_id: 'default-chatbot', input: 'from the root' }, keyed(randomUUID()));
    assert.equal((await atRoot.beta.agents.sessions.retrieve(session.id)).id, session.id);
    const stream = await atRoot.beta.agents.sessions.events.stream(session.id, { signal: AbortSignal.timeout(WAIT_MS) });
    const events: AnyEvent[] = [];
    for await (const event of stream) {
      events.push(event as AnyEvent);
      if (turnEnded(event as AnyEvent)) break;
    }
    assert.equal(textOf(events), 'Echo: from the root');
    assert.equal((await atRoot.beta.agents.retrieve('default-chatbot')).id, 'default-chatbot');
  });
});
