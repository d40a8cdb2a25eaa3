import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http, sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { createUserKey } from '../support/users.js';

const ADMIN = '/api/v1/admin/agents';

describe('saved agents: administration and snapshots', () => {
  let fake: FakeOpenAi;
  const streams: SseStream[] = [];
  before(async () => (fake = await startFakeOpenAi(env.fakeOpenAiPort)));
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
  });

  it('creates (201, version 1), replaces (200, next version) and lists agents with their definition', async () => {
    const id = `t-${randomUUID().slice(0, 8)}`;
    const created = await http(`${ADMIN}/${id}`, {
      method: 'PUT',
      body: { name: 'Helper', instructions: 'Be terse.', tools: [{ type: 'builtin', name: 'calculator' }], limits: { max_model_calls: 5 } },
    });
    assert.equal(created.status, 201);
    assert.equal(created.body.yuxi.version, 1);
    assert.equal(created.body.yuxi.instructions, 'Be terse.');
    assert.deepEqual(created.body.yuxi.limits, { max_model_calls: 5, max_tool_calls: 50, turn_timeout_s: 900 });
    const replaced = await http(`${ADMIN}/${id}`, { method: 'PUT', body: { name: 'Helper 2', tool_approval_mode: 'always_ask' } });
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.yuxi.version, 2);
    assert.deepEqual(replaced.body.yuxi.tools, [], 'a PUT replaces the whole definition');

    const publicView = await http(`${API}/${id}`);
    assert.equal(publicView.status, 200);
    assert.equal(publicView.body.name, 'Helper 2');
    assert.equal(publicView.body.yuxi.tool_approval_mode, 'always_ask');
    assert.equal(publicView.body.yuxi.instructions, undefined, 'instructions are for administrators');
    const list = await http(ADMIN);
    assert.equal(list.status, 200);
    assert.ok(list.body.data.some((a: any) => a.id === id && a.yuxi.version === 2));
  });

  it('refuses an invalid definition with every problem listed, and writes nothing', async () => {
    const id = `t-${randomUUID().slice(0, 8)}`;
    const res = await http(`${ADMIN}/${id}`, {
      method: 'PUT',
      body: {
        name: '',
        model: 'nope:x',
        colour: 'red',
        tools: [{ type: 'builtin', name: 'rm_rf' }, { type: 'mcp', server_label: 'x', server_url: 'ftp://example' }],
        limits: { max_model_calls: 0 },
      },
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'invalid_agent');
    const fields = res.body.error.details.fields.map((f: any) => f.field);
    // The unknown model too, though the rest of the definition does not parse.
    for (const field of ['name', 'colour', 'limits.max_model_calls', 'model']) assert.ok(fields.includes(field), `${field} in ${fields.join(', ')}`);
    assert.ok(fields.some((f: string) => f.startsWith('tools[0]')), 'unknown builtin');
    assert.ok(fields.some((f: string) => f.startsWith('tools[1]')), 'bad MCP url');
    assert.equal((await http(`${API}/${id}`)).status, 404);
    const badModel = await http(`${ADMIN}/${id}`, { method: 'PUT', body: { name: 'x', model: 'nope:x' } });
    assert.equal(badModel.status, 422);
    assert.ok(badModel.body.error.details.fields.some((f: any) => f.field === 'model'));
  });

  it('refuses the ids that are routes under /api/v1/agents (sessions, files)', async () => {
    for (const id of ['sessions', 'files']) {
      const res = await http(`${ADMIN}/${id}`, { method: 'PUT', body: { name: id, model: 'scripted:echo' } });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error.code, 'invalid_agent');
      assert.deepEqual(res.body.error.details.fields.map((f: any) => f.field), ['agent_id']);
    }
  });

  it('loads the agents declared in AGENTS_FILE at start', async () => {
    const res = await http(`${API}/file-declared`);
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'Declared in a file');
    assert.deepEqual(res.body.yuxi.tools, [{ type: 'builtin', name: 'calculator' }]);
    assert.equal(res.body.yuxi.limits.max_tool_calls, 3);
  });

  it('a private agent is visible to its creator only', async () => {
    const { id } = await putAgent({ visibility: 'private' });
    const other = await createUserKey(`private-agents-${randomUUID().slice(0, 8)}`);
    assert.equal((await http(`${API}/${id}`)).status, 200);
    assert.equal((await http(`${API}/${id}`, { key: other })).status, 404);
    assert.ok(!(await http(API, { key: other })).body.data.some((a: any) => a.id === id));
    const session = await http(`${API}/sessions`, { body: { agent_id: id }, idempotencyKey: `k-${randomUUID()}`, key: other });
    assert.equal(session.status, 404);
  });

  it('MCP header values are never shown back, nor accepted back', async () => {
    const { id, agent } = await putAgent({ tools: [{ type: 'mcp', server_label: 'crm', server_url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer s3cret' } }] });
    assert.deepEqual(agent.yuxi.tools[0].headers, { authorization: '***' });
    assert.doesNotMatch(JSON.stringify(agent), /s3cret/);
    // Saving what was read, unchanged, would store "***" as the credential: refused, field by field.
    const back = await http(`/api/v1/admin/agents/${id}`, { method: 'PUT', body: { name: agent.name, model: agent.agent?.model ?? agent.model, tools: agent.yuxi.tools } });
    assert.equal(back.status, 422, back.text);
    assert.match(JSON.stringify(back.body.error.details), /tools\[0\]\.headers/);
    const versions = await http(`/api/v1/admin/agents/${id}/versions`);
    assert.equal(versions.body.data.length, 1, 'nothing saved');
  });

  it('deletes an agent (404 afterwards); the built-in agent cannot be deleted', async () => {
    const { id } = await putAgent({});
    const deleted = await http(`${ADMIN}/${id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200);
    assert.deepEqual(deleted.body, { id, object: 'agent.deleted', deleted: true });
    assert.equal((await http(`${API}/${id}`)).status, 404);
    assert.equal((await http(`${ADMIN}/${id}`, { method: 'DELETE' })).status, 404);
    const session = await http(`${API}/sessions`, { body: { agent_id: id }, idempotencyKey: `k-${randomUUID()}` });
    assert.equal(session.status, 404, 'no new session with a deleted agent');
    const builtin = await http(`${ADMIN}/default-chatbot`, { method: 'DELETE' });
    assert.equal(builtin.status, 409);
  });

  it('a session keeps the agent it was created with; an edit changes only later sessions', async () => {
    const { id, model } = await putAgent({ instructions: 'version one' });
    fake.script(fakeModel(model), [{ text: 'first' }, { text: 'second' }, { text: 'third' }]);
    const old = await createSessionWith(id, 'hello');
    const stream = await SseStream.open(old.id);
    streams.push(stream);
    await stream.waitForType('agent.session.turn.completed');
    await putAgent({ instructions: 'version two', model }, id);

    await sendMessage(old.id, 'again');
    await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn.id !== stream.events.find((x) => x.type === 'agent.session.turn.completed')?.data.turn.id);
    const fresh = await createSessionWith(id, 'hi');
    const freshStream = await SseStream.open(fresh.id);
    streams.push(freshStream);
    await freshStream.waitForType('agent.session.turn.completed');

    const systems = fake.requests(fakeModel(model)).map((body: any) => body.messages[0]);
    assert.deepEqual(
      systems.map((m: any) => m.content),
      ['version one', 'version one', 'version two'],
    );
  });
});

describe('saved agents: the version history', () => {
  const versions = (id: string, query = '', key?: string) => http(`${ADMIN}/${id}/versions${query}`, key === undefined ? {} : { key });

  it('keeps every version a create or replace made, with its definition, actor and time, newest first', async () => {
    const me = (await http('/api/v1/me')).body;
    const { id, model } = await putAgent({ instructions: 'one', tools: [{ type: 'mcp', server_label: 'crm', server_url: 'http://user:pw@127.0.0.1:9/mcp?token=t0k', headers: { authorization: 'Bearer s3cret' } }] });
    await putAgent({ instructions: 'two', model, limits: { max_tool_calls: 4 } }, id);
    const refused = await http(`${ADMIN}/${id}`, { method: 'PUT', body: { name: 'x', limits: { max_tool_calls: -1 } } });
    assert.equal(refused.status, 422, 'a refused replace makes no version');

    const list = await versions(id);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.object, 'list');
    assert.deepEqual(list.body.data.map((v: any) => v.version), [2, 1]);
    assert.deepEqual([list.body.first_id, list.body.last_id, list.body.has_more], ['2', '1', false]);
    const [second, first] = list.body.data;
    assert.equal(second.object, 'agent.version');
    assert.equal(second.agent_id, id);
    assert.equal(second.actor_id, me.actor_id);
    assert.ok(Math.abs(second.created_at - Date.now() / 1000) < 120, 'written now (unix seconds)');
    assert.ok(second.created_at >= first.created_at);
    assert.deepEqual(second.definition, {
      name: `Agent ${id}`,
      description: '',
      instructions: 'two',
      model,
      tools: [],
      tool_approval_mode: 'default',
      allowed_models: null,
      tool_approval_pinned: false,
      limits: { max_tool_calls: 4 },
      context: {},
      multi_agent: null,
      visibility: 'public',
      environment: null,
      ttl: null,
    });
    assert.equal(first.definition.instructions, 'one');
    assert.deepEqual(first.definition.tools[0].headers, { authorization: '***' }, 'MCP credentials are never shown back');
    assert.doesNotMatch(JSON.stringify(list.body), /s3cret|t0k|:pw@/);

    // A version's definition is a PUT body as it is (rolling back is putting it again; here without its redacted MCP tool).
    const back = await http(`${ADMIN}/${id}`, { method: 'PUT', body: { ...first.definition, tools: [] } });
    assert.equal(back.status, 200, back.text);
    assert.equal(back.body.yuxi.version, 3);
    assert.equal(back.body.yuxi.instructions, 'one');
    assert.deepEqual((await versions(id)).body.data.map((v: any) => v.version), [3, 2, 1]);
  });

  it('pages by version in either order; a cursor that is not a version of this agent is 400', async () => {
    const { id, model } = await putAgent({});
    await putAgent({ model, instructions: 'b' }, id);
    await putAgent({ model, instructions: 'c' }, id);
    const page1 = await versions(id, '?limit=2');
    assert.deepEqual([page1.body.data.map((v: any) => v.version), page1.body.has_more, page1.body.last_id], [[3, 2], true, '2']);
    const page2 = await versions(id, `?limit=2&after=${page1.body.last_id}`);
    assert.deepEqual([page2.body.data.map((v: any) => v.version), page2.body.has_more], [[1], false]);
    const asc = await versions(id, '?order=asc&limit=2&after=1');
    assert.deepEqual(asc.body.data.map((v: any) => v.version), [2, 3]);
    for (const after of ['9', 'abc', '0', '99999999999']) {
      const bad = await versions(id, `?after=${after}`);
      assert.equal(bad.status, 400, `after=${after}: ${bad.text}`);
      assert.equal(bad.body.error.code, 'invalid_cursor');
    }
    assert.equal((await versions(id, '?limit=0')).body.error.code, 'validation_failed');
  });

  it('an agent loaded from AGENTS_FILE by every replica has one version, by the deployment (an unchanged definition makes none)', async () => {
    const list = await versions('file-declared');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.body.data.map((v: any) => [v.version, v.actor_id]),
      [[1, null]],
    );
    assert.equal(list.body.data[0].definition.name, 'Declared in a file');
  });

  it('is 404 for an unknown or deleted agent, 403 for a caller who is not an administrator', async () => {
    assert.equal((await versions('no-such-agent')).body.error.code, 'not_found');
    assert.equal((await versions('Not_A_Slug')).status, 404);
    const { id } = await putAgent({});
    assert.equal((await http(`${ADMIN}/${id}`, { method: 'DELETE' })).status, 200);
    assert.equal((await versions(id)).status, 404);
    const other = await createUserKey(`versions-${randomUUID().slice(0, 8)}`);
    const forbidden = await versions('default-chatbot', '', other);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.error.code, 'forbidden');
  });
});
