import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type Calculator,
  HARNESS_SOURCE,
  HARNESS_TOOL_NAMES,
  harnessTools,
  type McpConnector,
  offeredNames,
  type ResolvedTool,
  ToolCatalog,
  type ToolDeclaration,
  validateToolArguments,
  type WebSearch,
  type WorkdirFiles,
} from '#libs/tools';
import { toolPolicy } from '#libs/runtime';

// The harness's tools as the catalog offers them to a session with an environment: pure (builtin
// and client declarations only, so no MCP server is reached; the stand-ins are never called).

const catalog = new ToolCatalog({} as McpConnector, {} as Calculator, {} as WorkdirFiles, { enabled: false } as WebSearch);
const declared: ToolDeclaration[] = [
  { type: 'builtin', name: 'calculator' },
  { type: 'builtin', name: 'list_files' },
  { type: 'builtin', name: 'read_file' },
  { type: 'function', name: 'lookup' },
];
const byName = (tools: ResolvedTool[]) => new Map(tools.map((t) => [t.name, t]));

describe('the harness tools', () => {
  it('are offered only to a session with an environment', async () => {
    const without = byName(await catalog.resolve(declared));
    for (const name of ['shell', 'write_file', 'apply_patch']) assert.equal(without.has(name), false, name);
    assert.equal(without.get('read_file')?.source, 'builtin');
    const withEnv = byName(await catalog.resolve(declared, undefined, { environment: true }));
    for (const name of HARNESS_TOOL_NAMES) assert.equal(withEnv.get(name)?.source, HARNESS_SOURCE, name);
    assert.equal(withEnv.get('calculator')?.source, 'builtin');
    assert.equal(withEnv.get('lookup')?.executor, 'client');
  });

  it('replace the builtin list_files and read_file (by path in the workspace, not by file id)', async () => {
    const { tools } = await catalog.resolveAvailable(declared, undefined, { environment: true });
    assert.equal(tools.filter((t) => t.name === 'read_file').length, 1);
    const read = byName(tools).get('read_file')!;
    assert.deepEqual((read.parameters as { required: string[] }).required, ['path']);
    assert.equal(validateToolArguments(read, '{"path":"notes/a.md"}').ok, true);
    assert.equal(validateToolArguments(read, '{"file_id":"0123456789abcdef0123456789abcdef"}').ok, false);
  });

  it('take their names from a declared client function; an agent without tools still gets them', async () => {
    const tools = await catalog.resolve([{ type: 'function', name: 'shell', description: 'the client\'s own' }], undefined, { environment: true });
    assert.equal(tools.filter((t) => t.name === 'shell').length, 1);
    assert.equal(byName(tools).get('shell')!.source, HARNESS_SOURCE);
    assert.deepEqual((await catalog.resolve([], undefined, { environment: true })).map((t) => t.name).sort(), [...HARNESS_TOOL_NAMES].sort());
  });

  it('qualify an MCP tool of the same name in a session with an environment, and only there', () => {
    const mcpShell: ResolvedTool = { name: 'shell', remoteName: 'shell', description: '', parameters: {}, executor: 'server', requiresApproval: false, idempotent: false, sideEffects: true, source: 'mcp:ops' };
    assert.equal(offeredNames([mcpShell], HARNESS_TOOL_NAMES)[0]!.name, 'ops__shell');
    assert.equal(offeredNames([mcpShell])[0]!.name, 'shell');
  });

  it('run in the worker: writes are not repeated after a crash (side effects, not idempotent), reads are', () => {
    const tools = byName(harnessTools());
    for (const name of ['shell', 'write_file', 'apply_patch']) assert.deepEqual([tools.get(name)!.executor, tools.get(name)!.sideEffects, tools.get(name)!.idempotent], ['server', true, false], name);
    for (const name of ['list_files', 'read_file']) assert.deepEqual([tools.get(name)!.executor, tools.get(name)!.sideEffects, tools.get(name)!.idempotent], ['server', false, true], name);
  });

  it('follow the session\'s approval rules as any server tool does', () => {
    const tools = harnessTools();
    assert.equal(toolPolicy(tools, 'default', []).needsApproval('shell'), false);
    assert.equal(toolPolicy(tools, 'always_ask', []).needsApproval('shell'), true);
    assert.equal(toolPolicy(tools, 'always_ask', ['shell']).needsApproval('shell'), false, 'trusted for the session');
    assert.equal(toolPolicy(tools, 'always_trust', []).needsApproval('apply_patch'), false);
  });

  it('check their arguments: a command is 1..65536 characters, timeout_s a positive integer', () => {
    const shell = byName(harnessTools()).get('shell')!;
    assert.equal(validateToolArguments(shell, '{"command":"ls","timeout_s":5}').ok, true);
    assert.equal(validateToolArguments(shell, '{"command":""}').ok, false);
    assert.equal(validateToolArguments(shell, `{"command":"${'x'.repeat(65_537)}"}`).ok, false);
    assert.equal(validateToolArguments(shell, '{"command":"ls","timeout_s":0}').ok, false);
    assert.equal(validateToolArguments(shell, '{"command":"ls","cwd":"/"}').ok, false);
    const patch = byName(harnessTools()).get('apply_patch')!;
    assert.equal(validateToolArguments(patch, '{"patch":"--- a/x\\n+++ b/x\\n"}').ok, true);
  });

  it('are never run by the catalog (the runtime runs them in the workspace)', async () => {
    const shell = byName(harnessTools()).get('shell')!;
    await assert.rejects(catalog.execute(shell, [], { command: 'ls' }, { idempotencyKey: 'k', signal: new AbortController().signal, sessionId: 's' }), /workspace/);
  });
});
