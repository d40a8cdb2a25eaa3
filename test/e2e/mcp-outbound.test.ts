import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { fakeModel } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, bootstrap, type Caller, call, newProductUser, openStreamAs, postEventAs } from '../support/identity.js';
import { query } from '../support/db.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import type { SseStream } from '../support/sse.js';

// The outbound address policy for MCP servers (libs/outbound). The suite's stack runs with
// MCP_ALLOW_PRIVATE_NETWORKS=false and MCP_ALLOWED_HOSTS=127.0.0.1,localhost (scripts/test.mjs):
// agents administrators own reach the suite's loopback MCP servers, a user's private agent never does.
describe('MCP outbound address policy', () => {
  let fake: FakeOpenAi;
  let mcp: TestMcpServer;
  /** A plain HTTP server that records every connection made to it (none may be). */
  let receiver: http.Server;
  let receiverPort: number;
  let connections = 0;
  const streams: SseStream[] = [];
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    mcp = await startMcpServer();
    receiver = http.createServer((_req, res) => res.writeHead(500).end('should never be reached'));
    receiver.on('connection', () => (connections += 1));
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverPort = (receiver.address() as AddressInfo).port;
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
    await mcp.close();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  const putAgentAs = (caller: Caller, id: string, definition: Record<string, unknown>) =>
    call(caller, `${ADMIN}/agents/${id}`, { method: 'PUT', body: { name: `Agent ${id}`, ...definition } });
  const newId = () => `t-${randomUUID().slice(0, 8)}`;
  const mcpTool = (serverUrl: string, extra: object = {}) => ({ type: 'mcp', server_label: 'calc', server_url: serverUrl, allowed_tools: ['add'], ...extra });

  it("refuses a user's private agent on a literal private address at save, in dotted, decimal, hex and IPv6 spellings, naming the field", async () => {
    const { caller } = await newProductUser('outbound-save');
    for (const url of [`http://127.0.0.1:${receiverPort}/mcp`, `http://2130706433:${receiverPort}/mcp`, 'http://0x7f.1/mcp', 'http://[::ffff:169.254.169.254]/latest', 'http://10.0.0.5/mcp', 'http://[fd00:ec2::254]/']) {
      const res = await putAgentAs(caller, newId(), { visibility: 'private', tools: [mcpTool(url)] });
      assert.equal(res.status, 422, `${url}: ${res.text}`);
      assert.equal(res.body.error.code, 'mcp_url_not_allowed');
      assert.deepEqual(
        res.body.error.details.fields.map((f: any) => f.field),
        ['tools[0].server_url'],
      );
    }
    // The OAuth issuer too.
    const auth = { type: 'oauth_client_credentials', secret: 's', client_id: 'c', issuer: 'http://169.254.169.254/' };
    const issuer = await putAgentAs(caller, newId(), { visibility: 'private', tools: [mcpTool('https://mcp.example.com/mcp', { auth })] });
    assert.equal(issuer.status, 422, issuer.text);
    assert.deepEqual(issuer.body.error.details.fields.map((f: any) => f.field), ['tools[0].auth.issuer']);
    // A host name is judged when the server is called, not at save.
    assert.equal((await putAgentAs(caller, newId(), { visibility: 'private', tools: [mcpTool(`http://localhost:${receiverPort}/mcp`)] })).status, 201);
  });

  it('lets an administrator save an agent on an allowlisted host only', async () => {
    assert.equal((await putAgentAs(bootstrap, newId(), { tools: [mcpTool(mcp.url)] })).status, 201);
    const refused = await putAgentAs(bootstrap, newId(), { tools: [mcpTool('http://10.0.0.5/mcp')] });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'mcp_url_not_allowed');
  });

  /** One turn of `agentId` as `caller`, its model asked to call `add` then to answer; the turn's events and its items. */
  async function turn(caller: Caller, agentId: string, model: string): Promise<{ stream: SseStream; turnId: string; items: any[] }> {
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c1', name: 'add', arguments: '{"a":2,"b":3}' }] }, { text: 'done' }]);
    const created = await call(caller, `${API}/sessions`, { body: { agent_id: agentId }, idempotencyKey: newKey('create') });
    assert.equal(created.status, 201, created.text);
    const stream = await openStreamAs(caller, created.body.id);
    streams.push(stream);
    assert.equal((await postEventAs(caller, created.body.id, { type: 'agent.session.input.message', input: 'add 2 and 3' })).status, 202);
    const turnId: string = (await stream.waitForType('agent.session.turn.created')).data.turn_id;
    await stream.waitForType('agent.session.turn.completed', turnId);
    const items = (await call(caller, `${API}/sessions/${created.body.id}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
    return { stream, turnId, items };
  }

  it("refuses a user's private agent whose host name resolves to loopback when it is called: nothing is sent, the log says why", async () => {
    const { caller } = await newProductUser('outbound-call');
    const id = newId();
    const model = `openai:m-${randomUUID()}`;
    // localhost is on MCP_ALLOWED_HOSTS, which a user's private agent never gets.
    const saved = await putAgentAs(caller, id, { model, visibility: 'private', tools: [mcpTool(`http://localhost:${receiverPort}/mcp`, { server_label: 'sneaky' })] });
    assert.equal(saved.status, 201, saved.text);
    const before = connections;
    const { stream, turnId } = await turn(caller, id, model);
    assert.ok(stream.events.some((e) => e.type === 'yuxi.session.turn.capability_limited' && e.data.turn_id === turnId), 'the server was left out');
    assert.equal(connections, before, 'no connection reached the private address');
    // The worker's log says which server and why (the client's event and the model's note name no source).
    const logFile = path.join(process.env.TEST_LOG_DIR ?? '', 'worker.log');
    let logged = false;
    for (let i = 0; i < 20 && !logged; i++) {
      logged = readFileSync(logFile, 'utf8').includes('MCP server \\"sneaky\\" unavailable: the address of localhost is not allowed');
      if (!logged) await sleep(100);
    }
    assert.ok(logged, 'the worker log names the refused address');
  });

  it('an administrator-owned agent reaches an allowlisted loopback MCP server', async () => {
    const id = newId();
    const model = `openai:m-${randomUUID()}`;
    assert.equal((await putAgentAs(bootstrap, id, { model, tools: [mcpTool(mcp.url)] })).status, 201);
    const { items } = await turn(bootstrap, id, model);
    const output = items.find((item: any) => item.type === 'function_call_output' && item.call_id === 'c1');
    assert.equal(output?.output, '5', JSON.stringify(items));
  });

  it("shows a public agent's MCP hosts, paths and header names to administrators only", async () => {
    const id = newId();
    const tool = { type: 'mcp', server_label: 'crm', server_url: 'http://127.0.0.1:9/internal-crm/mcp', headers: { 'X-Internal-Tenant': 'acme' } };
    assert.equal((await putAgentAs(bootstrap, id, { tools: [tool] })).status, 201);
    const { caller } = await newProductUser('outbound-viewer');
    for (const url of [`${API}/${id}`, `${API}`, `${ADMIN}/agents`]) {
      const res = await call(caller, url);
      assert.equal(res.status, 200, res.text);
      for (const hidden of ['127.0.0.1', 'internal-crm', 'X-Internal-Tenant']) assert.ok(!res.text.includes(hidden), `${url} shows ${hidden}`);
      const agent = Array.isArray(res.body.data) ? res.body.data.find((a: any) => a.id === id) : res.body;
      assert.deepEqual(agent.yuxi.tools, [{ type: 'mcp', server_label: 'crm' }]);
    }
    const admin = await call(bootstrap, `${API}/${id}`);
    assert.equal(admin.body.yuxi.tools[0].server_url, tool.server_url);
    assert.deepEqual(admin.body.yuxi.tools[0].headers, { 'X-Internal-Tenant': '***' });
  });

  it('keeps static MCP header values sealed at rest (agent, versions, session snapshot) and sends them as written', async () => {
    const keyed = await startMcpServer({ requiredHeader: ['x-api-key', 'k-plain-123'] });
    try {
      const id = newId();
      const model = `openai:m-${randomUUID()}`;
      const saved = await putAgentAs(bootstrap, id, { model, tools: [mcpTool(keyed.url, { headers: { 'X-Api-Key': 'k-plain-123' } })] });
      assert.equal(saved.status, 201, saved.text);
      const { items } = await turn(bootstrap, id, model);
      const output = items.find((item: any) => item.type === 'function_call_output' && item.call_id === 'c1');
      assert.equal(output?.output, '5', 'the server got the header as written');
      const [row] = await query('SELECT tools FROM agents WHERE id = $1', [id]);
      const [version] = await query('SELECT definition FROM agent_versions WHERE agent_id = $1', [id]);
      const snapshots = await query('SELECT agent_snapshot FROM sessions WHERE agent_id = $1', [id]);
      assert.match(row.tools[0].headers['X-Api-Key'], /^sealed:v1:/);
      for (const stored of [row, version, ...snapshots]) assert.ok(!JSON.stringify(stored).includes('k-plain-123'), 'no plaintext header value at rest');
      // Saving the same definition again is unchanged for AGENTS_FILE's comparison, and still works.
      assert.equal((await putAgentAs(bootstrap, id, { model, tools: [mcpTool(keyed.url, { headers: { 'X-Api-Key': 'k-plain-123' } })] })).status, 200);
    } finally {
      await keyed.close();
    }
  });
});
