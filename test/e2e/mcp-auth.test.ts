import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { fakeModel } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, bootstrap, type Caller, call, newProductUser, openStreamAs, postEventAs } from '../support/identity.js';
import { type AuthMcpServer, startAuthMcpServer } from '../support/mcp-auth-server.js';
import { direct } from '../support/sdk.js';
import type { SseStream } from '../support/sse.js';

// MCP credentials from named secrets (libs/secrets), read by the worker when it calls: bearer
// tokens and OAuth client credentials with the discovery the MCP authorization spec describes,
// against a server that checks them on the wire.
describe('MCP auth from named secrets', () => {
  let fake: FakeOpenAi;
  let server: AuthMcpServer;
  const streams: SseStream[] = [];
  const turnsSeen = new Set<string>();
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    server = await startAuthMcpServer();
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
    await server.close();
  });

  const secretName = (): string => `s-${randomUUID().slice(0, 8)}`;
  const putSecret = (caller: Caller, name: string, value: string, scope?: 'own' | 'shared') =>
    call(caller, `${ADMIN}/secrets/${name}${scope ? `?scope=${scope}` : ''}`, { method: 'PUT', body: { value } });
  const mcpTool = (auth: object): object => ({ type: 'mcp', server_label: 'guarded', server_url: server.url, allowed_tools: ['add'], auth });

  /** PUT an agent as `caller`; its model is a fresh fake one, scripted per turn. */
  async function agentAs(caller: Caller, definition: Record<string, unknown>): Promise<{ id: string; model: string }> {
    const id = `t-${randomUUID().slice(0, 8)}`;
    const model = `openai:m-${randomUUID()}`;
    const res = await call(caller, `${ADMIN}/agents/${id}`, { method: 'PUT', body: { name: `Agent ${id}`, model, ...definition } });
    assert.ok(res.status === 201, `PUT agent: ${res.status} ${res.text}`);
    return { id, model };
  }

  /**
   * One turn in which the model calls `add` {a: 2, b: 3} once, then answers; resolves with the
   * call's output item and the turn's events. `sessionId` continues that session (a later turn).
   */
  async function addTurn(caller: Caller, agent: { id: string; model: string }, sessionId?: string): Promise<{ sessionId: string; output: any; stream: SseStream; turnId: string }> {
    const callId = `call_${randomUUID().slice(0, 8)}`;
    fake.script(fakeModel(agent.model), [{ tool_calls: [{ id: callId, name: 'add', arguments: '{"a":2,"b":3}' }] }, { text: 'done' }]);
    let id = sessionId;
    if (!id) {
      const created = await call(caller, `${API}/sessions`, { body: { agent_id: agent.id }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      id = created.body.id as string;
    }
    const stream = await openStreamAs(caller, id);
    streams.push(stream);
    const sent = await postEventAs(caller, id, { type: 'agent.session.input.message', input: 'add 2 and 3' });
    assert.equal(sent.status, 202, sent.text);
    // The stream may replay the session's earlier turns: this turn is the one not seen before.
    const turnId: string = (await stream.waitFor((e) => e.type === 'agent.session.turn.created' && !turnsSeen.has(e.data.turn_id))).data.turn_id;
    turnsSeen.add(turnId);
    await stream.waitForType('agent.session.turn.completed', turnId);
    const items = await call(caller, `${API}/sessions/${id}/turns/${turnId}/items?order=asc&limit=100`);
    const output = items.body.data.find((item: any) => item.type === 'function_call_output' && item.call_id === callId);
    assert.ok(output, `the call has an output: ${items.text}`);
    return { sessionId: id, output, stream, turnId };
  }

  it('stores secrets write-only, per owner, versioned and audited', async () => {
    const alice = await newProductUser('alice');
    const name = secretName();
    const created = await putSecret(alice.caller, name, 'value-one');
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(
      { object: created.body.object, name: created.body.name, scope: created.body.scope, owner_id: created.body.owner_id, version: created.body.version },
      { object: 'secret', name, scope: 'own', owner_id: alice.userId, version: 1 },
    );
    const rotated = await putSecret(alice.caller, name, 'value-two');
    assert.equal(rotated.status, 200);
    assert.equal(rotated.body.version, 2);
    const list = await call(alice.caller, `${ADMIN}/secrets`);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((s: any) => [s.name, s.version]), [[name, 2]]);
    for (const text of [created.text, rotated.text, list.text]) assert.ok(!text.includes('value-'), 'no response carries a value');
    // Another user's namespace is their own; the shared one is for administrators.
    const bob = await newProductUser('bob');
    assert.deepEqual((await call(bob.caller, `${ADMIN}/secrets`)).body.data, []);
    assert.equal((await putSecret(alice.caller, name, 'x', 'shared')).status, 403);
    assert.equal((await call(alice.caller, `${ADMIN}/secrets?scope=shared`)).status, 403);
    // Refused shapes.
    assert.equal((await putSecret(alice.caller, 'bad%20name', 'x')).status, 422);
    assert.equal((await call(alice.caller, `${ADMIN}/secrets/${name}`, { method: 'PUT', body: { value: 'x', extra: 1 } })).status, 422);
    assert.equal((await putSecret(alice.caller, name, 'two\nlines')).status, 422);
    assert.equal((await putSecret(alice.caller, name, '')).status, 422);

    const deleted = await call(alice.caller, `${ADMIN}/secrets/${name}`, { method: 'DELETE' });
    assert.deepEqual(deleted.body, { name, object: 'secret.deleted', deleted: true });
    assert.equal((await call(alice.caller, `${ADMIN}/secrets/${name}`, { method: 'DELETE' })).status, 404);

    const audit = await call(bootstrap, `${ADMIN}/audit?limit=100`);
    const mine = audit.body.data.filter((entry: any) => entry.details?.name === name);
    assert.deepEqual(mine.map((entry: any) => entry.action).sort(), ['secret.created', 'secret.deleted', 'secret.replaced']);
    assert.ok(!JSON.stringify(mine).includes('value-'), 'the audit trail holds no value');
  });

  it('through the SDK: a shared secret put, rotated, listed and deleted', async () => {
    const name = secretName();
    assert.equal((await direct.admin.putSecret(name, 'sdk-value', 'shared')).version, 1);
    const rotated = await direct.admin.putSecret(name, 'sdk-value-2', 'shared');
    assert.deepEqual([rotated.scope, rotated.owner_id, rotated.version], ['shared', null, 2]);
    assert.ok((await direct.admin.listSecrets('shared')).data.some((s) => s.name === name));
    assert.ok(!(await direct.admin.listSecrets()).data.some((s) => s.name === name), 'not among the caller\'s own');
    assert.equal((await direct.admin.deleteSecret(name, 'shared')).deleted, true);
  });

  it('takes a reference to a secret in an MCP tool, never a value or a namespace', async () => {
    const put = (tool: object) => call(bootstrap, `${ADMIN}/agents/t-${randomUUID().slice(0, 8)}`, { method: 'PUT', body: { name: 'x', tools: [tool] } });
    const refused = async (tool: object, field: RegExp) => {
      const res = await put(tool);
      assert.equal(res.status, 422, res.text);
      assert.match(JSON.stringify(res.body.error.details), field);
    };
    await refused(mcpTool({ type: 'bearer', secret: 'a', value: 'tok' }), /auth\.value: unknown field/);
    await refused(mcpTool({ type: 'bearer', secret: 'not a name' }), /auth\.secret/);
    await refused(mcpTool({ type: 'oauth_client_credentials', secret: 'a', client_id: 'c' }), /auth\.issuer/);
    await refused({ ...(mcpTool({ type: 'bearer', secret: 'a' }) as object), headers: { Authorization: 'Bearer x' } }, /headers\.Authorization/);
    await refused({ ...(mcpTool({ type: 'bearer', secret: 'a' }) as object), secrets_owner_id: null }, /secrets_owner_id","errors":\["unknown field/);
    const auth = { type: 'oauth_client_credentials', secret: 'a', client_id: 'c', issuer: 'https://as.example', scope: 'mcp:tools' };
    const saved = await put(mcpTool(auth));
    assert.equal(saved.status, 201, saved.text);
    assert.deepEqual(saved.body.yuxi.tools[0].auth, auth);
  });

  it('sends a bearer token from a shared secret, and a rotation reaches the running session', async () => {
    const name = secretName();
    assert.equal((await putSecret(bootstrap, name, 'token-A', 'shared')).status, 201);
    server.acceptedTokens.add('token-A');
    const agent = await agentAs(bootstrap, { tools: [mcpTool({ type: 'bearer', secret: name })] });

    const first = await addTurn(bootstrap, agent);
    assert.equal(first.output.output, '5', JSON.stringify(first.output));
    assert.ok(server.mcpAuthorizations.includes('Bearer token-A'));

    // Rotate: the server takes only the new token; the session (its snapshot frozen) still calls.
    assert.equal((await putSecret(bootstrap, name, 'token-B', 'shared')).body.version, 2);
    server.acceptedTokens.delete('token-A');
    server.acceptedTokens.add('token-B');
    const seen = server.mcpAuthorizations.length;
    const second = await addTurn(bootstrap, agent, first.sessionId);
    assert.equal(second.output.output, '5', JSON.stringify(second.output));
    assert.equal(server.mcpAuthorizations.slice(seen).at(-1), 'Bearer token-B');
    const history = await call(bootstrap, `${API}/sessions/${first.sessionId}/items?limit=100`);
    assert.ok(!history.text.includes('token-'), 'no token reaches the session history');
  });

  it("resolves a private agent's secret in its owner's namespace only", async () => {
    // An administrator's own private agent: the suite's loopback server is on MCP_ALLOWED_HOSTS for
    // agents administrators own, never for a product user's (test/e2e/mcp-outbound.test.ts).
    const name = secretName();
    // A shared secret of that name exists and the server would take it: the private agent must not get it.
    assert.equal((await putSecret(bootstrap, name, 'token-shared', 'shared')).status, 201);
    server.acceptedTokens.add('token-shared');
    server.acceptedTokens.add('token-owner');
    const agent = await agentAs(bootstrap, { visibility: 'private', tools: [mcpTool({ type: 'bearer', secret: name })] });
    const seen = server.mcpAuthorizations.length;

    const without = await addTurn(bootstrap, agent);
    assert.equal(without.output.yuxi.success, false, JSON.stringify(without.output));
    assert.ok(without.stream.events.some((e) => e.type === 'yuxi.session.turn.capability_limited' && e.data.turn_id === without.turnId), 'the server was left out');
    assert.ok(!server.mcpAuthorizations.slice(seen).includes('Bearer token-shared'), 'the shared secret never left for a private agent');

    assert.equal((await putSecret(bootstrap, name, 'token-owner')).status, 201);
    const withOwn = await addTurn(bootstrap, agent, without.sessionId);
    assert.equal(withOwn.output.output, '5', JSON.stringify(withOwn.output));
    assert.equal(server.mcpAuthorizations.at(-1), 'Bearer token-owner');
  });

  it('gets OAuth client credentials tokens through protected resource metadata discovery, shared across sessions, and survives a rotated client secret', async () => {
    const name = secretName();
    assert.equal((await putSecret(bootstrap, name, server.client.secret, 'shared')).status, 201);
    const auth = { type: 'oauth_client_credentials', secret: name, client_id: server.client.id, issuer: server.issuer, scope: 'mcp:tools' };
    const agent = await agentAs(bootstrap, { tools: [mcpTool(auth)] });
    const seenMcp = server.mcpAuthorizations.length;

    const first = await addTurn(bootstrap, agent);
    assert.equal(first.output.output, '5', JSON.stringify(first.output));
    // 401 without a token, then RFC 9728 and RFC 8414 discovery, then one client_credentials request for this resource.
    assert.equal(server.mcpAuthorizations[seenMcp], undefined);
    assert.ok(server.metadataRequests.includes('/.well-known/oauth-protected-resource/mcp'), server.metadataRequests.join());
    assert.ok(server.metadataRequests.includes('/.well-known/oauth-authorization-server'), server.metadataRequests.join());
    assert.deepEqual(server.tokenRequests, [{ clientId: server.client.id, grantType: 'client_credentials', resource: server.url, scope: 'mcp:tools', status: 200 }]);
    assert.match(server.mcpAuthorizations.at(-1) ?? '', /^Bearer at-/);

    // Another session of the agent on the same worker uses the token already issued.
    const other = await addTurn(bootstrap, agent);
    assert.equal(other.output.output, '5');
    assert.equal(server.tokenRequests.length, 1, 'no second token request');

    // Rotation at the authorization server: new client secret, old tokens revoked.
    server.client.secret = 'client-secret-2';
    server.revokeIssued();
    assert.equal((await putSecret(bootstrap, name, 'client-secret-2', 'shared')).body.version, 2);
    const rotated = await addTurn(bootstrap, agent, first.sessionId);
    assert.equal(rotated.output.output, '5', JSON.stringify(rotated.output));
    assert.equal(server.tokenRequests.at(-1)?.status, 200, JSON.stringify(server.tokenRequests));
  });

  it('does not present client credentials to the advertised authorization server when the declared issuer differs', async () => {
    const name = secretName();
    assert.equal((await putSecret(bootstrap, name, server.client.secret, 'shared')).status, 201);
    const auth = { type: 'oauth_client_credentials', secret: name, client_id: server.client.id, issuer: 'https://elsewhere.example' };
    const agent = await agentAs(bootstrap, { tools: [mcpTool(auth)] });
    const tokenRequests = server.tokenRequests.length;
    const turn = await addTurn(bootstrap, agent);
    assert.equal(turn.output.yuxi.success, false, JSON.stringify(turn.output));
    assert.equal(server.tokenRequests.length, tokenRequests, 'no token request reached the advertised server');
  });
});
