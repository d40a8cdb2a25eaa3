import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { AgentsApiError, AgentsClient } from '#libs/sdk';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, signToken } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

// The full audit of a run (an administrator's user token only) on the real stack, which runs with
// MODEL_REQUEST_AUDIT=on (scripts/test.mjs): what the worker sent a real `openai:` model through
// the fake server, as an administrator with a user token reads it back; who else is refused; the
// audit entry of each read.
describe('model requests: the exact requests of a run, for administrators with a user token', () => {
  let fake: FakeOpenAi;
  let admin: Caller & { userId: string };
  let operator: Caller;
  let plain: Caller;
  const streams: SseStream[] = [];

  /** A user token whose user holds `role` (null: none), granted by the bootstrap administrator. */
  async function tokenUser(name: string, role: string | null): Promise<Caller & { userId: string }> {
    const caller: Caller = { name, token: await signToken({ subject: `mreq-${name}-${randomUUID()}` }) };
    const me = await call(caller, '/api/v1/me');
    assert.equal(me.status, 200, me.text);
    if (role !== null) {
      const granted = await call(bootstrap, `${ADMIN}/users/${me.body.user_id}/role`, { method: 'PUT', body: { role } });
      assert.equal(granted.status, 200, granted.text);
    }
    return { ...caller, userId: me.body.user_id };
  }

  const requestsPath = (sessionId: string, runId: string, query = '') => `${ADMIN}/sessions/${sessionId}/runs/${runId}/model-requests${query}`;

  /** A session of `agentId` whose first turn completed; its turn's runs and steps as the timeline shows them. */
  async function completedTurn(agentId: string, input: string): Promise<{ sessionId: string; turn: any }> {
    const session = await createSessionWith(agentId, input);
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    await stream.waitForType('agent.session.turn.completed');
    stream.close();
    const timeline = await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline`);
    assert.equal(timeline.status, 200, timeline.text);
    assert.equal(timeline.body.model_requests, 'recorded', 'the stack records them');
    return { sessionId: session.id, turn: timeline.body.data[0] };
  }

  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    admin = await tokenUser('admin', 'admin');
    operator = await tokenUser('operator', 'operator');
    plain = await tokenUser('plain', null);
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
  });

  it('a tool round on an openai: model: both requests, in step order, exactly as the model server received them; audited', async () => {
    const { id, model } = await putAgent({ instructions: 'Be exact.', tools: [{ type: 'builtin', name: 'calculator' }] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'call_calc', name: 'calculator', arguments: '{"expression":"6*7"}' }], text: 'Computing.' }, { text: 'It is 42.' }]);
    const { sessionId, turn } = await completedTurn(id, 'What is 6*7?');
    assert.equal(turn.runs.length, 1, JSON.stringify(turn.runs));
    const run = turn.runs[0];
    const modelSteps = run.steps.filter((s: any) => s.kind === 'model_call');
    assert.deepEqual(run.steps.map((s: any) => s.kind), ['model_call', 'tool_call', 'model_call']);

    const res = await call(admin, requestsPath(sessionId, run.id));
    assert.equal(res.status, 200, res.text);
    const received = fake.requests(fakeModel(model));
    assert.equal(received.length, 2, 'two calls reached the model server');
    assert.deepEqual(
      res.body.data.map((r: any) => ({ object: r.object, step_id: r.step_id, seq: r.seq, model: r.model })),
      modelSteps.map((s: any) => ({ object: 'model_request', step_id: s.id, seq: s.seq, model })),
      'one request per model-call step, in step order',
    );
    assert.deepEqual([res.body.data[0].seq, res.body.data[1].seq], [1, 3]);
    assert.deepEqual(res.body.data.map((r: any) => r.request), received, 'what was recorded is what the server received, field for field');
    // What that means here: the instructions, the conversation and the tool offered; the answer's call saw the tool round.
    const [first, second] = res.body.data.map((r: any) => r.request);
    assert.deepEqual(first.messages, [
      { role: 'system', content: 'Be exact.' },
      { role: 'user', content: 'What is 6*7?' },
    ]);
    assert.deepEqual(first.tools.map((t: any) => [t.type, t.function.name]), [['function', 'calculator']]);
    assert.deepEqual(second.messages.slice(0, 2), first.messages);
    const asked = second.messages.find((m: any) => m.role === 'assistant' && m.tool_calls);
    assert.deepEqual(asked?.tool_calls, [{ id: 'call_calc', type: 'function', function: { name: 'calculator', arguments: '{"expression":"6*7"}' } }]);
    const result = second.messages.find((m: any) => m.role === 'tool');
    assert.equal(result?.tool_call_id, 'call_calc');
    assert.match(result?.content, /42/);
    assert.equal(res.text.includes('sk-test-fake'), false, 'never the provider key');
    assert.equal(res.body.first_id, modelSteps[0].id);
    assert.equal(res.body.last_id, modelSteps[1].id);
    assert.equal(res.body.has_more, false);
    for (const r of res.body.data) assert.ok(Number.isInteger(r.created_at) && r.created_at > 0, JSON.stringify(r));

    // Pages by cursor, oldest first; newest first when asked; a cursor of another list is refused.
    const page1 = await call(admin, requestsPath(sessionId, run.id, '?limit=1'));
    assert.deepEqual([page1.body.data.map((r: any) => r.seq), page1.body.has_more], [[1], true]);
    const page2 = await call(admin, requestsPath(sessionId, run.id, `?limit=1&after=${page1.body.last_id}`));
    assert.deepEqual([page2.body.data.map((r: any) => r.seq), page2.body.has_more], [[3], false]);
    const desc = await call(admin, requestsPath(sessionId, run.id, '?order=desc'));
    assert.deepEqual(desc.body.data.map((r: any) => r.seq), [3, 1]);
    const foreignCursor = await call(admin, requestsPath(sessionId, run.id, `?after=${run.steps[1].id}`));
    assert.equal(foreignCursor.status, 400, foreignCursor.text);
    assert.equal(foreignCursor.body.error.code, 'invalid_cursor', 'a tool step is no model request');

    // Every read, paged or not, is on the audit trail, naming the administrator and what was shown.
    const audit = await call(bootstrap, `${ADMIN}/audit?limit=100`);
    assert.equal(audit.status, 200, audit.text);
    const reads = audit.body.data.filter((e: any) => e.action === 'session.model_requests_read' && e.target.id === sessionId);
    assert.equal(reads.length, 4, 'the full read, two pages, the newest-first read (the refused cursor read nothing)');
    const [latestRead] = reads;
    assert.deepEqual(
      { actor: latestRead.actor_id, key: latestRead.key_id, type: latestRead.target.type, run: latestRead.details.run_id },
      { actor: admin.userId, key: null, type: 'session', run: run.id },
    );
    // Newest first: the first read, of the whole run in step order, is the oldest entry.
    assert.deepEqual(reads.at(-1).details.step_ids, modelSteps.map((s: any) => s.id));
    assert.deepEqual(latestRead.details.step_ids, modelSteps.map((s: any) => s.id).reverse(), 'the newest-first read');
  });

  it('a scripted model: the messages and tools it was given; the SDK reads them with a user token', async () => {
    const { sessionId, turn } = await completedTurn('default-chatbot', 'hello audit');
    const run = turn.runs[0];
    const client = new AgentsClient({ baseUrl: env.apiUrl, apiKey: admin.token });
    const page = await client.admin.sessions.modelRequests(sessionId, run.id);
    assert.equal(page.data.length, 1);
    const [only] = page.data;
    assert.equal(only!.step_id, run.steps.find((s: any) => s.kind === 'model_call').id);
    assert.equal(only!.model, run.model);
    const request = only!.request as { model: string; messages: unknown[]; tools: unknown[] };
    assert.equal(request.model, run.model.replace(/^scripted:/, ''));
    assert.deepEqual(request.messages, [{ role: 'user', text: 'hello audit' }]);
    assert.ok(Array.isArray(request.tools));
    const byKey = new AgentsClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });
    await assert.rejects(byKey.admin.sessions.modelRequests(sessionId, run.id), (error: unknown) => error instanceof AgentsApiError && error.status === 403 && error.code === 'user_token_required');
  });

  it('only an administrator\'s user token: an API key, even the administrator\'s, is 403 user_token_required; other roles 403 forbidden', async () => {
    const { sessionId, turn } = await completedTurn('default-chatbot', 'who may read this');
    const path = requestsPath(sessionId, turn.runs[0].id);
    const byKey = await call(bootstrap, path);
    assert.equal(byKey.status, 403, byKey.text);
    assert.equal(byKey.body.error.code, 'user_token_required', 'the bootstrap administrator\'s own key');
    for (const caller of [operator, plain]) {
      const refused = await call(caller, path);
      assert.equal(refused.status, 403, `${caller.name}: ${refused.text}`);
      assert.equal(refused.body.error.code, 'forbidden', caller.name);
    }
    const audit = await call(bootstrap, `${ADMIN}/audit?limit=100`);
    assert.deepEqual(audit.body.data.filter((e: any) => e.action === 'session.model_requests_read' && e.target.id === sessionId), [], 'a refused read reads nothing');
  });

  it('404: an unknown or malformed session, an unknown run, another session\'s run, a deleted session', async () => {
    const one = await completedTurn('default-chatbot', 'first session');
    const other = await completedTurn('default-chatbot', 'second session');
    const runId = one.turn.runs[0].id;
    for (const path of [
      requestsPath(randomUUID(), runId),
      requestsPath('not-a-uuid', runId),
      requestsPath(one.sessionId, randomUUID()),
      requestsPath(one.sessionId, 'not-a-uuid'),
      requestsPath(other.sessionId, runId),
    ]) {
      const res = await call(admin, path);
      assert.equal(res.status, 404, `${path}: ${res.text}`);
      assert.equal(res.body.error.code, 'not_found');
    }
    assert.equal((await call(admin, requestsPath(one.sessionId, runId))).status, 200);
    assert.equal((await call(bootstrap, `${API}/sessions/${one.sessionId}`, { method: 'DELETE' })).status, 200);
    assert.equal((await call(admin, requestsPath(one.sessionId, runId))).status, 404, 'a deleted session shows nothing');
  });
});
