import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import {
  Calculator,
  currentTime,
  McpAuth,
  McpConnector,
  McpOutbound,
  McpSessionPool,
  offeredNames,
  parseToolDeclarations,
  TOOL_NAME_PATTERN,
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

const config = (env: Record<string, string> = {}) => new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', ...env });
// These servers take no auth: a store that holds no secret.
const noSecrets = new McpAuth({ resolve: () => Promise.resolve(null) } as unknown as SecretsStore);
const ctx = (key = 'turn-1:call-1', signal = new AbortController().signal) => ({ idempotencyKey: key, signal, sessionId: 'session-1' });
/** A workdir with no files (the file tools are tested in file-tools.test.ts and end to end). */
const emptyWorkdir: WorkdirFiles = { list: async () => [], readText: async () => null, parse: async () => null };

describe('parseToolDeclarations', () => {
  const errorsOf = (raw: unknown) => parseToolDeclarations(raw).errors;

  it('normalizes a valid set of function, builtin and mcp tools', () => {
    const { tools, errors } = parseToolDeclarations([
      { type: 'function', name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } },
      { type: 'function', name: 'ping' },
      { type: 'builtin', name: 'calculator', requires_approval: true },
      { type: 'builtin', name: 'ask_user' },
      { type: 'mcp', server_label: 'crm', server_url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer t' }, allowed_tools: ['a', 'a', 'b'], idempotent: true },
    ]);
    assert.deepEqual(errors, []);
    assert.equal(tools.length, 5);
    assert.deepEqual(tools[1], { type: 'function', name: 'ping', parameters: { type: 'object', properties: {} } });
    assert.deepEqual(tools[2], { type: 'builtin', name: 'calculator', requires_approval: true });
    assert.deepEqual(tools[4], {
      type: 'mcp',
      server_label: 'crm',
      server_url: 'https://mcp.example.com/mcp',
      headers: { authorization: 'Bearer t' },
      allowed_tools: ['a', 'b'],
      idempotent: true,
    });
  });

  it('rejects what is not an array of at most 64 objects', () => {
    assert.deepEqual(errorsOf({}), ['tools: must be an array']);
    assert.match(errorsOf(Array.from({ length: 65 }, (_, i) => ({ type: 'function', name: `f${i}` })))[0], /at most 64/);
    assert.deepEqual(errorsOf([null, { type: 'shell' }]), ['tools[0]: must be an object', 'tools[1].type: must be one of function, builtin, mcp']);
  });

  it('rejects unknown fields', () => {
    assert.deepEqual(errorsOf([{ type: 'function', name: 'f', strict: true }]), ['tools[0].strict: unknown field for a function tool']);
    assert.match(errorsOf([{ type: 'builtin', name: 'calculator', server_url: 'http://x' }]).join(), /tools\[0\]\.server_url: unknown field/);
  });

  it('rejects bad names and labels', () => {
    assert.match(errorsOf([{ type: 'function', name: 'has space' }])[0], /^tools\[0\]\.name: /);
    assert.match(errorsOf([{ type: 'function', name: 'x'.repeat(65) }])[0], /^tools\[0\]\.name: /);
    assert.match(errorsOf([{ type: 'mcp', server_label: 'a.b', server_url: 'http://x' }])[0], /^tools\[0\]\.server_label: /);
    assert.match(errorsOf([{ type: 'mcp', server_label: 'a', server_url: 'http://x', allowed_tools: ['ok', 'n/o'] }])[0], /^tools\[0\]\.allowed_tools\[1\]: /);
  });

  it('rejects server URLs that are not http(s)', () => {
    for (const url of ['ftp://example.com/mcp', 'not a url', '', 42]) {
      assert.match(errorsOf([{ type: 'mcp', server_label: 's', server_url: url }])[0], /^tools\[0\]\.server_url: must be an http\(s\) URL/);
    }
  });

  it('rejects headers that are not single-line strings or that the transport owns', () => {
    const headers = (h: unknown) => errorsOf([{ type: 'mcp', server_label: 's', server_url: 'http://x', headers: h }]);
    assert.match(headers({ 'x-a': 1 })[0], /^tools\[0\]\.headers\.x-a: /);
    assert.match(headers({ 'x-a': 'a\r\nb' })[0], /^tools\[0\]\.headers\.x-a: /);
    assert.match(headers({ 'Idempotency-Key': 'k' })[0], /cannot be overridden/);
    assert.match(headers(['a'])[0], /^tools\[0\]\.headers: /);
  });

  it('refuses a credential as the API shows it (***) back as its value, in a header or the URL', () => {
    assert.match(errorsOf([{ type: 'mcp', server_label: 's', server_url: 'http://x', headers: { authorization: '***' } }])[0], /^tools\[0\]\.headers\.authorization: \*\*\* is how a saved credential is shown/);
    for (const url of ['http://***@x/mcp', 'http://x/mcp?token=***']) {
      assert.match(errorsOf([{ type: 'mcp', server_label: 's', server_url: url }])[0], /^tools\[0\]\.server_url: \*\*\* is how/);
    }
    assert.deepEqual(errorsOf([{ type: 'mcp', server_label: 's', server_url: 'http://x', headers: { authorization: 'Bearer ***real' } }]), [], 'only the placeholder itself');
  });

  it('rejects parameters that are not an object JSON Schema ajv can compile', () => {
    for (const parameters of [{ type: 'string' }, [], 'object', { properties: {} }]) {
      assert.match(errorsOf([{ type: 'function', name: 'f', parameters }])[0], /^tools\[0\]\.parameters: must be a JSON Schema object/);
    }
    assert.match(errorsOf([{ type: 'function', name: 'f', parameters: { type: 'object', properties: 5 } }])[0], /^tools\[0\]\.parameters: invalid JSON Schema/);
  });

  it('rejects duplicate tool names and server labels', () => {
    assert.deepEqual(errorsOf([{ type: 'function', name: 'f' }, { type: 'function', name: 'f' }]), ['tools[1].name: duplicate tool name "f"']);
    assert.deepEqual(errorsOf([{ type: 'builtin', name: 'calculator' }, { type: 'function', name: 'calculator' }]), ['tools[1].name: duplicate tool name "calculator"']);
    const mcp = { type: 'mcp', server_label: 's', server_url: 'http://x' };
    assert.deepEqual(errorsOf([mcp, mcp]), ['tools[1].server_label: duplicate server_label "s"']);
  });

  it('rejects unknown builtins and non-boolean flags', () => {
    assert.match(errorsOf([{ type: 'builtin', name: 'shell' }])[0], /^tools\[0\]\.name: must be one of ask_user, calculator, current_time/);
    assert.deepEqual(errorsOf([{ type: 'builtin', name: 'calculator', idempotent: 'yes' }]), ['tools[0].idempotent: must be a boolean']);
  });
});

describe('calculator', () => {
  const calculator = new Calculator();
  after(() => calculator.close());

  it('evaluates arithmetic with 14 significant digits', async () => {
    assert.deepEqual(await calculator.evaluate('(3 + 4) * 2 ^ 10'), { success: true, output: '7168' });
    assert.deepEqual(await calculator.evaluate('1 / 3'), { success: true, output: '0.33333333333333' });
    assert.deepEqual(await calculator.evaluate('0.1 + 0.2'), { success: true, output: '0.3' });
    assert.deepEqual(await calculator.evaluate('x = 2; x * 3'), { success: true, output: '6' });
  });

  it('refuses the functions that parse, rewrite or extend mathjs', async () => {
    for (const expression of ['import({}, {})', 'createUnit("x")', 'evaluate("1")', 'parse("1")', 'compile("1")', 'config({number: "BigNumber"})']) {
      const outcome = await calculator.evaluate(expression);
      assert.equal(outcome.success, false, expression);
      assert.match(outcome.output, /^calculator error: function \w+ is disabled$/, expression);
    }
    // A refused config call changed nothing for later expressions.
    assert.deepEqual(await calculator.evaluate('1 / 3'), { success: true, output: '0.33333333333333' });
  });

  it('reports syntax errors and unknown symbols as failed outcomes', async () => {
    assert.match((await calculator.evaluate('2 +')).output, /^calculator error: /);
    assert.match((await calculator.evaluate('constructor')).output, /^calculator error: /);
  });

  it('stops a runaway expression and keeps working afterwards', async () => {
    const quick = new Calculator(300);
    try {
      const outcome = await quick.evaluate('combinations(1e15, 5e14)');
      assert.deepEqual(outcome, { success: false, output: 'calculator error: the evaluation took longer than 300 ms' });
      assert.deepEqual(await quick.evaluate('6 * 7'), { success: true, output: '42' });
    } finally {
      quick.close();
    }
  });

  it('rejects with the abort reason when the call is cancelled', async () => {
    const controller = new AbortController();
    controller.abort(new Error('turn cancelled'));
    await assert.rejects(calculator.evaluate('1 + 1', controller.signal), /turn cancelled/);
  });
});

describe('current_time', () => {
  const now = new Date('2026-01-15T12:00:00.000Z');

  it('answers in UTC by default and in a given IANA zone', () => {
    assert.deepEqual(JSON.parse(currentTime(undefined, now).output), { iso: '2026-01-15T12:00:00.000Z', timezone: 'UTC', local: '2026-01-15T12:00:00+00:00', weekday: 'Thursday' });
    const paris = currentTime('Europe/Paris', now);
    assert.equal(paris.success, true);
    assert.deepEqual(JSON.parse(paris.output), { iso: '2026-01-15T12:00:00.000Z', timezone: 'Europe/Paris', local: '2026-01-15T13:00:00+01:00', weekday: 'Thursday' });
    assert.equal(JSON.parse(currentTime('America/St_Johns', now).output).local, '2026-01-15T08:30:00-03:30');
  });

  it('fails for an unknown zone', () => {
    const outcome = currentTime('Mars/Olympus_Mons', now);
    assert.equal(outcome.success, false);
    assert.match(outcome.output, /unknown time zone "Mars\/Olympus_Mons"/);
  });
});

describe('validateToolArguments', () => {
  const add: ResolvedTool = {
    name: 'add',
    description: '',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'], additionalProperties: false },
    executor: 'client',
    requiresApproval: false,
    idempotent: false,
    sideEffects: true,
    source: 'client',
  };

  it('accepts valid arguments', () => {
    assert.deepEqual(validateToolArguments(add, '{"a": 1, "b": 2.5}'), { ok: true, value: { a: 1, b: 2.5 } });
  });

  it('names what is wrong for the model', () => {
    assert.deepEqual(validateToolArguments(add, '{"a": "1", "b": 2}'), { ok: false, error: 'Invalid arguments for add: /a must be number' });
    assert.deepEqual(validateToolArguments(add, '{"a": 1}'), { ok: false, error: "Invalid arguments for add: must have required property 'b'" });
    assert.deepEqual(validateToolArguments(add, '{"a": 1, "b": 2, "c": 3}'), { ok: false, error: 'Invalid arguments for add: must NOT have additional properties (c)' });
  });

  it('rejects text that is not JSON, and JSON that is not an object', () => {
    const notJson = validateToolArguments(add, '{"a": 1,');
    assert.equal(notJson.ok, false);
    assert.match(!notJson.ok ? notJson.error : '', /^Invalid arguments for add: not valid JSON/);
    for (const json of ['[1, 2]', '3', 'null', '"a"']) {
      assert.deepEqual(validateToolArguments(add, json), { ok: false, error: 'Invalid arguments for add: must be a JSON object' });
    }
  });

  it('treats empty arguments as an empty object', () => {
    assert.deepEqual(validateToolArguments({ ...add, parameters: { type: 'object', properties: {} } }, ''), { ok: true, value: {} });
  });
});

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

describe('offeredNames: tool names unique across MCP servers', () => {
  const tool = (name: string, source: string): ResolvedTool => ({
    name,
    ...(source.startsWith('mcp:') ? { remoteName: name } : {}),
    description: '',
    parameters: { type: 'object' },
    executor: source === 'client' ? 'client' : 'server',
    requiresApproval: false,
    idempotent: false,
    sideEffects: true,
    source,
  });
  const names = (tools: ResolvedTool[]) => tools.map((t) => `${t.source}/${t.remoteName ?? t.name} -> ${t.name}`);

  it('keeps a name only one source has; prefixes every MCP tool of a shared name with its server label', () => {
    const offered = offeredNames([tool('echo', 'mcp:a'), tool('sum', 'mcp:a'), tool('echo', 'mcp:b'), tool('time', 'mcp:b')]);
    assert.deepEqual(names(offered), ['mcp:a/echo -> a__echo', 'mcp:a/sum -> sum', 'mcp:b/echo -> b__echo', 'mcp:b/time -> time']);
  });

  it('never renames a builtin or a client function: the MCP tool that shares their name is the one prefixed', () => {
    const offered = offeredNames([tool('calculator', 'mcp:a'), tool('calculator', 'builtin'), tool('lookup', 'client'), tool('lookup', 'mcp:a')]);
    assert.deepEqual(names(offered), ['mcp:a/calculator -> a__calculator', 'builtin/calculator -> calculator', 'client/lookup -> lookup', 'mcp:a/lookup -> a__lookup']);
  });

  it('prefixes an MCP tool named as a coordination tool, whether or not the agent coordinates', () => {
    assert.deepEqual(names(offeredNames([tool('create_subagent', 'mcp:a')])), ['mcp:a/create_subagent -> a__create_subagent']);
  });

  it('names each tool the same whatever order the listings come in (the runs of a turn match their recorded calls)', () => {
    const tools = [tool('echo', 'mcp:a'), tool('echo', 'mcp:b'), tool('x', 'mcp:b'), tool('x', 'builtin'), tool('y', 'mcp:c')];
    const byTool = (list: ResolvedTool[]) => Object.fromEntries(list.map((t) => [`${t.source}/${t.remoteName ?? t.name}`, t.name]));
    assert.deepEqual(byTool(offeredNames([...tools].reverse())), byTool(offeredNames(tools)));
  });

  it('keeps a long prefixed name within 64 characters and the model APIs\' pattern, distinct per tool', () => {
    const label = 'l'.repeat(40);
    const [one, two] = [`${'n'.repeat(40)}_one`, `${'n'.repeat(40)}_two`];
    // Each name is also the other server's: all four are prefixed, and the long label's two are cut.
    const offered = offeredNames([tool(one, `mcp:${label}`), tool(two, `mcp:${label}`), tool(one, 'mcp:other'), tool(two, 'mcp:other')]);
    const [first, second] = offered;
    for (const t of [first!, second!]) {
      assert.ok(t.name.length <= 64 && TOOL_NAME_PATTERN.test(t.name), t.name);
      assert.ok(t.name.startsWith(`${label}__`), t.name);
    }
    assert.notEqual(first!.name, second!.name, 'names that differ only past the cut stay distinct (the hash)');
  });
});
