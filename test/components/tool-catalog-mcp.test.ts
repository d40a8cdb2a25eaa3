import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import {
  Calculator,
  McpAuth,
  McpConnector,
  McpOutbound,
  McpSessionPool,
  ToolCatalog,
  ToolSourceError,
  validateToolArguments,
  WebSearch,
  type McpToolDeclaration,
  type ResolvedTool,
  type ToolDeclaration,
  type WorkdirFiles,
} from '#libs/tools';
import type { SecretsStore } from '#libs/secrets';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';

// The tool catalog against real MCP servers on loopback (test/support/mcp-server.ts).
const config = (env: Record<string, string> = {}) => new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', ...env });
// These servers take no auth: a store that holds no secret.
const noSecrets = new McpAuth({ resolve: () => Promise.resolve(null) } as unknown as SecretsStore);
const ctx = (key = 'turn-1:call-1', signal = new AbortController().signal) => ({ idempotencyKey: key, signal, sessionId: 'session-1' });
/** A workdir with no files (the file tools are tested in file-tools.test.ts and end to end). */
const emptyWorkdir: WorkdirFiles = { list: async () => [], readText: async () => null, parse: async () => null };

/** Connectors over session pools that the suite ends when it is done (their sessions hold connections open). */
const pools: McpSessionPool[] = [];
function connectorFor(cfg: AppConfig): McpConnector {
  // The suite's MCP servers listen on loopback: private networks allowed, as npm start does.
  const pool = new McpSessionPool(cfg, noSecrets, new McpOutbound(config({ MCP_ALLOW_PRIVATE_NETWORKS: 'true' })));
  pools.push(pool);
  return new McpConnector(cfg, pool);
}
after(async () => {
  await Promise.all(pools.map((pool) => pool.onApplicationShutdown()));
});

describe('ToolCatalog with a real MCP server', () => {
  let server: TestMcpServer;
  let guarded: TestMcpServer;
  let deadUrl: string;
  const calculator = new Calculator();
  const catalog = new ToolCatalog(connectorFor(config()), calculator, emptyWorkdir, new WebSearch(config(), { resolve: () => Promise.resolve(null) } as unknown as SecretsStore));
  const mcp = (overrides: Partial<McpToolDeclaration> = {}): McpToolDeclaration => ({ type: 'mcp', server_label: 'test', server_url: server.url, ...overrides });

  before(async () => {
    server = await startMcpServer();
    guarded = await startMcpServer({ requiredHeader: ['x-token', 'secret'] });
    // A port that just closed: connecting is refused at once, every time.
    const dead = await startMcpServer();
    deadUrl = dead.url;
    await dead.close();
  });
  after(async () => {
    calculator.close();
    await server.close();
    await guarded.close();
  });

  it('resolves builtins, functions and MCP tools, filtered by allowed_tools; an MCP tool named as a declared function is offered under its server label', async () => {
    const declarations: ToolDeclaration[] = [
      { type: 'builtin', name: 'calculator' },
      { type: 'builtin', name: 'ask_user', requires_approval: true },
      { type: 'function', name: 'fail_always', description: 'client-side' },
      mcp({ allowed_tools: ['add', 'fail_always'], requires_approval: true }),
    ];
    const tools = await catalog.resolve(declarations);
    // sideEffects apart from idempotent: a builtin is a read, an MCP tool may change something.
    assert.deepEqual(tools.map((t) => [t.name, t.executor, t.source, t.requiresApproval, t.idempotent, t.sideEffects]), [
      ['calculator', 'server', 'builtin', false, true, false],
      ['ask_user', 'user', 'builtin', true, true, false],
      ['fail_always', 'client', 'client', false, false, true],
      ['add', 'server', 'mcp:test', true, false, true],
      ['test__fail_always', 'server', 'mcp:test', true, false, true],
    ]);
    const idempotentMcp = await catalog.resolve([mcp({ allowed_tools: ['add'], idempotent: true })]);
    assert.deepEqual(idempotentMcp.map((t) => [t.name, t.idempotent, t.sideEffects]), [['add', true, true]], 'declared idempotent, still a tool that may change something');
    assert.equal(tools.find((t) => t.name === 'test__fail_always')!.remoteName, 'fail_always');
    const add = tools.find((t) => t.name === 'add')!;
    assert.equal(add.description, 'Add two numbers.');
    assert.deepEqual(validateToolArguments(add, '{"a": "x", "b": 1}'), { ok: false, error: 'Invalid arguments for add: /a must be number' });
  });

  it('lists every tool without allowed_tools, none with an empty list', async () => {
    assert.deepEqual((await catalog.resolve([mcp()])).map((t) => t.name).sort(), ['add', 'fail_always', 'hold', 'record_side_effect']);
    assert.deepEqual(await catalog.resolve([mcp({ allowed_tools: [] })]), []);
  });

  it('calls add, sending the idempotency key in _meta and as the Idempotency-Key header', async () => {
    const declarations = [mcp()];
    const add = (await catalog.resolve(declarations)).find((t) => t.name === 'add')!;
    const outcome = await catalog.execute(add, declarations, { a: 2, b: 3 }, ctx('turn-9:call-4'));
    assert.deepEqual(outcome, { success: true, output: '5' });
    assert.deepEqual(server.calls.at(-1), { tool: 'add', args: { a: 2, b: 3 }, metaKey: 'turn-9:call-4', headerKey: 'turn-9:call-4' });
  });

  it('reports an isError result as a failed outcome', async () => {
    const declarations = [mcp()];
    const fail = (await catalog.resolve(declarations)).find((t) => t.name === 'fail_always')!;
    assert.deepEqual(await catalog.execute(fail, declarations, {}, ctx()), { success: false, output: 'boom' });
  });

  it('runs server builtins', async () => {
    const tools = await catalog.resolve([{ type: 'builtin', name: 'calculator' }, { type: 'builtin', name: 'current_time' }]);
    assert.deepEqual(await catalog.execute(tools[0], [], { expression: '2 * 21' }, ctx()), { success: true, output: '42' });
    const time = await catalog.execute(tools[1], [], { timezone: 'Asia/Tokyo' }, ctx());
    assert.equal(JSON.parse(time.output).timezone, 'Asia/Tokyo');
    assert.equal((await catalog.execute(tools[1], [], { timezone: 'Nowhere/Land' }, ctx())).success, false);
  });

  it('sends the declared headers', async () => {
    const declarations = [mcp({ server_url: guarded.url, headers: { 'x-token': 'secret' } })];
    const add = (await catalog.resolve(declarations)).find((t) => t.name === 'add')!;
    assert.deepEqual(await catalog.execute(add, declarations, { a: 1, b: 1 }, ctx()), { success: true, output: '2' });
    await assert.rejects(catalog.resolve([mcp({ server_url: guarded.url })]), (err) => err instanceof ToolSourceError && err.code === 'tool_server_unavailable');
  });

  it('throws ToolSourceError for an unreachable server, when listing and when calling', async () => {
    const declarations = [mcp({ server_url: deadUrl })];
    await assert.rejects(catalog.resolve(declarations), (err) => err instanceof ToolSourceError && err.code === 'tool_server_unavailable');
    const add: ResolvedTool = { name: 'add', description: '', parameters: { type: 'object' }, executor: 'server', requiresApproval: false, idempotent: false, sideEffects: true, source: 'mcp:test' };
    await assert.rejects(catalog.execute(add, declarations, { a: 1, b: 2 }, ctx()), (err) => err instanceof ToolSourceError && err.code === 'tool_server_unavailable');
  });

  it('resolves the available tools without an unreachable server, and says why it was left out', async () => {
    const declarations: ToolDeclaration[] = [{ type: 'builtin', name: 'calculator' }, mcp({ server_label: 'down', server_url: deadUrl }), mcp({ allowed_tools: ['add'] })];
    const { tools, unavailable } = await catalog.resolveAvailable(declarations);
    assert.deepEqual(tools.map((t) => [t.name, t.source]), [['calculator', 'builtin'], ['add', 'mcp:test']]);
    assert.equal(unavailable.length, 1);
    assert.ok(unavailable[0] instanceof ToolSourceError && unavailable[0].code === 'tool_server_unavailable' && unavailable[0].message.includes('"down"'));
    assert.deepEqual(await catalog.resolveAvailable([mcp()]).then((r) => r.unavailable), []);
  });

  it('passes a cancelled call’s own reason through, not a ToolSourceError', async () => {
    const declarations = [mcp()];
    const add = (await catalog.resolve(declarations)).find((t) => t.name === 'add')!;
    const controller = new AbortController();
    controller.abort(new Error('turn cancelled'));
    await assert.rejects(catalog.execute(add, declarations, { a: 1, b: 2 }, ctx('k', controller.signal)), /turn cancelled/);
  });

  it('gives up on a server that does not answer within TOOL_TIMEOUT_MS', async () => {
    const slow = connectorFor(config({ TOOL_TIMEOUT_MS: '200' }));
    await assert.rejects(
      slow.callTool(mcp(), 'record_side_effect', { note: 'late', delay_ms: 30_000 }, ctx('turn-1:slow')),
      (err) => err instanceof ToolSourceError && /no answer within 200 ms/.test(err.message),
    );
  });

  it('offers two servers\' tools of one name under distinct names, and calls each on its own server by its own name', async () => {
    const other = await startMcpServer();
    try {
      const declarations: ToolDeclaration[] = [{ type: 'builtin', name: 'calculator' }, mcp({ server_label: 'one', allowed_tools: ['add'] }), mcp({ server_label: 'two', server_url: other.url, allowed_tools: ['add'] })];
      const tools = await catalog.resolve(declarations);
      assert.deepEqual(tools.map((t) => [t.name, t.source, t.remoteName]), [
        ['calculator', 'builtin', undefined],
        ['one__add', 'mcp:one', 'add'],
        ['two__add', 'mcp:two', 'add'],
      ]);
      const one = await catalog.execute(tools[1]!, declarations, { a: 1, b: 2 }, ctx('turn-3:call-1'));
      const two = await catalog.execute(tools[2]!, declarations, { a: 10, b: 20 }, ctx('turn-3:call-2'));
      assert.deepEqual([one.output, two.output], ['3', '30']);
      assert.deepEqual(server.calls.at(-1), { tool: 'add', args: { a: 1, b: 2 }, metaKey: 'turn-3:call-1', headerKey: 'turn-3:call-1' });
      assert.deepEqual(other.calls, [{ tool: 'add', args: { a: 10, b: 20 }, metaKey: 'turn-3:call-2', headerKey: 'turn-3:call-2' }]);
    } finally {
      await other.close();
    }
  });

  it('test server: a repeated idempotency key performs the side effect once', async () => {
    const connector = connectorFor(config());
    const first = await connector.callTool(mcp(), 'record_side_effect', { note: 'once' }, ctx('turn-2:call-1'));
    const again = await connector.callTool(mcp(), 'record_side_effect', { note: 'once' }, ctx('turn-2:call-1'));
    assert.deepEqual([first, again], [{ success: true, output: 'recorded once' }, { success: true, output: 'recorded once' }]);
    assert.deepEqual(server.effects.filter((e) => e.key === 'turn-2:call-1'), [{ note: 'once', key: 'turn-2:call-1' }]);
  });
});
