import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { currentTime, offeredNames, parseToolDeclarations, TOOL_NAME_PATTERN, validateToolArguments, type ResolvedTool } from '#libs/tools';

// The tool declarations, current_time and argument validation: pure, no server. The calculator (a
// sandboxed thread) and the catalog over a real MCP server are test/components: calculator, tool-catalog-mcp.

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
