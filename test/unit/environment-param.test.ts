import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HostedEnvironmentParam, parseAgentDefinition, parseEnvironmentParam, resolveEnvironment, UNSUPPORTED_ENVIRONMENT_FIELDS } from '#libs/agents';
import type { SandboxLimitValues } from '#libs/config';
import { environmentView } from '#libs/engine';
import type { EnvironmentConfig } from '#libs/environments';

// The environment param (session create, saved agents) and how a session tightens its agent's
// default: pure, no database. The routes are covered by test/e2e/session-environments.test.ts.
const CEILINGS: SandboxLimitValues = { timeoutS: 1800, cpuS: 3600, memoryMb: 8192, processes: 2048, diskMb: 10_240 };
const DEFAULTS: SandboxLimitValues = { timeoutS: 120, cpuS: 300, memoryMb: 2048, processes: 256, diskMb: 1024 };
const DEPLOYMENT = { defaults: DEFAULTS, ceilings: CEILINGS };
const FILE = '0123456789abcdef0123456789abcdef';

const parse = (raw: unknown, allowFiles = true) => parseEnvironmentParam(raw, 'environment', { ceilings: CEILINGS, allowFiles });
const fields = (raw: unknown, allowFiles = true): string[] => parse(raw, allowFiles).errors.map((error) => error.field);
const hosted = (raw: Record<string, unknown>): HostedEnvironmentParam => {
  const parsed = parse({ type: 'openai_hosted', ...raw });
  assert.deepEqual(parsed.errors, []);
  return parsed.param as HostedEnvironmentParam;
};
const agentDefault = (raw: Record<string, unknown>): EnvironmentConfig => {
  const { definition, errors } = parseAgentDefinition({ name: 'a', environment: { type: 'openai_hosted', ...raw } }, CEILINGS);
  assert.deepEqual(errors, []);
  return definition!.environment!;
};

describe('the environment param', () => {
  it('reads none, and openai_hosted normalised: paths relative, domains lowercased, setup commands with a cwd as a cd', () => {
    assert.deepEqual(parse({ type: 'none' }).param, { type: 'none' });
    const param = hosted({
      network: { access: 'restricted', allowed_domains: ['PyPI.org', 'pypi.org', 'files.pythonhosted.org.'] },
      env: { LANG: 'C.UTF-8', _X1: '' },
      files: [{ type: 'file_id', file_id: FILE, path: '/workspace/data/in.csv' }],
      setup_commands: ['pip install x', { command: 'make', cwd: '/workspace/src' }, { command: 'ls', cwd: null }],
      limits: { timeout_s: 60, disk_mb: 10_240 },
    });
    assert.deepEqual(param, {
      type: 'openai_hosted',
      network: { access: 'restricted', allowed_domains: ['pypi.org', 'files.pythonhosted.org'] },
      env: { LANG: 'C.UTF-8', _X1: '' },
      files: [{ type: 'file_id', file_id: FILE, path: 'data/in.csv' }],
      setup_commands: ['pip install x', "cd 'src' && make", 'ls'],
      limits: { timeout_s: 60, disk_mb: 10_240 },
    });
    // Upstream-nullable fields: null is "not asked for".
    assert.deepEqual(hosted({ network: null, env: null, files: null, setup_commands: null, desktop: null }).network, undefined);
  });

  it('names each unsupported upstream field, and unknown ones', () => {
    for (const field of UNSUPPORTED_ENVIRONMENT_FIELDS) assert.deepEqual(fields({ type: 'openai_hosted', [field]: field === 'desktop' ? { enabled: false } : 'x' }), [`environment.${field}`]);
    assert.deepEqual(fields({ type: 'openai_hosted', workspace: '/x' }), ['environment.workspace']);
    assert.deepEqual(fields({ type: 'none', network: { access: 'enabled' } }), ['environment.network']);
    assert.deepEqual(fields({ type: 'cloud' }), ['environment.type']);
    assert.deepEqual(fields('none'), ['environment']);
  });

  it('says self_hosted is unavailable rather than invalid', () => {
    const parsed = parse({ type: 'self_hosted', workspace_directory: '/workspace' });
    assert.equal(parsed.param, null);
    assert.match(parsed.unavailable ?? '', /self_hosted/);
  });

  it('bounds env names, values and count', () => {
    assert.deepEqual(fields({ type: 'openai_hosted', env: { '1X': 'a', 'A-B': 'b', 'A B': 'c', OK: 'd' } }), ['environment.env.1X', 'environment.env.A-B', 'environment.env.A B']);
    assert.deepEqual(fields({ type: 'openai_hosted', env: { A: 1, B: 'x'.repeat(8193), C: 'a\0b' } }), ['environment.env.A', 'environment.env.B', 'environment.env.C']);
    assert.deepEqual(fields({ type: 'openai_hosted', env: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, 'x'])) }), ['environment.env']);
    assert.deepEqual(fields({ type: 'openai_hosted', env: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`V${i}`, 'x'.repeat(8000)])) }), ['environment.env']);
    // A name that is an Object.prototype accessor is kept as the variable it is.
    assert.deepEqual(Object.keys(hosted({ env: JSON.parse('{"__proto__": "x", "A": "1"}') }).env), ['__proto__', 'A']);
  });

  it('bounds domains: syntax, no wildcards or addresses, count, and lists only with restricted', () => {
    const net = (network: unknown): string[] => fields({ type: 'openai_hosted', network });
    assert.deepEqual(net({ access: 'restricted', allowed_domains: ['*.example.com', 'localhost', '10.0.0.1', 'a..b.com', 'ok.com', 'x.com:443', '-a.com'] }), [0, 1, 2, 3, 5, 6].map((i) => `environment.network.allowed_domains[${i}]`));
    assert.deepEqual(net({ access: 'restricted', allowed_domains: Array.from({ length: 101 }, (_, i) => `d${i}.com`) }), ['environment.network.allowed_domains']);
    assert.deepEqual(net({ access: 'enabled', allowed_domains: ['a.com'] }), ['environment.network.allowed_domains']);
    assert.deepEqual(net({ access: 'restricted' }), ['environment.network']);
    assert.deepEqual(net({ access: 'open' }), ['environment.network.access']);
    assert.deepEqual(net({ access: 'disabled', proxy: 'x' }), ['environment.network.proxy']);
  });

  it('keeps files inside the workspace: no .., no absolute path elsewhere, not under attachments/, each path once, ids well-formed', () => {
    const file = (path: unknown, file_id: unknown = FILE): string[] => fields({ type: 'openai_hosted', files: [{ type: 'file_id', file_id, path }] });
    for (const path of ['../etc/passwd', 'a/../../b', '/etc/passwd', '/workspace/../x', 'a//b', './a', '', 'a\nb', 'attachments/x', 'x'.repeat(1025)]) {
      assert.deepEqual(file(path), ['environment.files[0].path'], path);
    }
    assert.deepEqual(file('ok.txt', 'nothex'), ['environment.files[0].file_id']);
    assert.deepEqual(fields({ type: 'openai_hosted', files: [{ type: 'inline', data: 'eA==', path: 'a' }] }), ['environment.files[0].type']);
    const same = { type: 'file_id', file_id: FILE, path: 'a.txt' };
    assert.deepEqual(fields({ type: 'openai_hosted', files: [same, { ...same, path: '/workspace/a.txt' }] }), ['environment.files[1].path']);
    assert.deepEqual(fields({ type: 'openai_hosted', files: Array.from({ length: 21 }, (_, i) => ({ ...same, path: `f${i}` })) }), ['environment.files']);
    // A saved agent's default has no files: they belong to a caller.
    assert.deepEqual(fields({ type: 'openai_hosted', files: [same] }, false), ['environment.files']);
  });

  it('bounds setup commands and limits (each at most the deployment ceiling)', () => {
    assert.deepEqual(fields({ type: 'openai_hosted', setup_commands: ['', 'x'.repeat(8193), { command: 'a', cwd: '/etc' }, { command: 'a', env: {} }] }), [
      'environment.setup_commands[0]',
      'environment.setup_commands[1]',
      'environment.setup_commands[2].cwd',
      'environment.setup_commands[3].env',
    ]);
    assert.deepEqual(fields({ type: 'openai_hosted', setup_commands: Array.from({ length: 21 }, () => 'true') }), ['environment.setup_commands']);
    assert.deepEqual(fields({ type: 'openai_hosted', limits: { timeout_s: 1801, cpu_s: 0, memory_mb: 1.5, processes: 2048, gpu: 1 } }), [
      'environment.limits.timeout_s',
      'environment.limits.cpu_s',
      'environment.limits.memory_mb',
      'environment.limits.gpu',
    ]);
  });
});

describe('a session environment over its agent default', () => {
  it('without an agent default: none stays none, openai_hosted gets network disabled and the deployment defaults', () => {
    assert.deepEqual(resolveEnvironment(null, undefined, DEPLOYMENT), { environment: null, loosened: [] });
    assert.deepEqual(resolveEnvironment(null, { type: 'none' }, DEPLOYMENT), { environment: null, loosened: [] });
    const { environment } = resolveEnvironment(null, hosted({ limits: { timeout_s: 30 } }), DEPLOYMENT);
    assert.deepEqual(environment, {
      type: 'openai_hosted',
      network: { access: 'disabled' },
      env: {},
      files: [],
      setup_commands: [],
      limits: { timeout_s: 30, cpu_s: 300, memory_mb: 2048, processes: 256, disk_mb: 1024 },
    });
  });

  it('omitted: the agent default; none: none; openai_hosted alone: the agent default as is', () => {
    const agent = agentDefault({ network: { access: 'enabled' }, env: { A: '1' }, setup_commands: ['a'], limits: { timeout_s: 60 } });
    const expected = { ...agent, limits: { timeout_s: 60, cpu_s: 300, memory_mb: 2048, processes: 256, disk_mb: 1024 } };
    assert.deepEqual(resolveEnvironment(agent, undefined, DEPLOYMENT).environment, expected);
    assert.deepEqual(resolveEnvironment(agent, hosted({}), DEPLOYMENT).environment, expected);
    assert.equal(resolveEnvironment(agent, { type: 'none' }, DEPLOYMENT).environment, null);
  });

  it('merges env (the session wins a name), setup commands (agent first) and the session files', () => {
    const agent = agentDefault({ env: { A: 'agent', B: 'agent' }, setup_commands: ['agent'] });
    const { environment } = resolveEnvironment(agent, hosted({ env: { B: 'session', C: 'session' }, setup_commands: ['session'], files: [{ type: 'file_id', file_id: FILE, path: 'x' }] }), DEPLOYMENT);
    assert.deepEqual(environment?.env, { A: 'agent', B: 'session', C: 'session' });
    assert.deepEqual(environment?.setup_commands, ['agent', 'session']);
    assert.deepEqual(environment?.files, [{ type: 'file_id', file_id: FILE, path: 'x' }]);
  });

  it('lets network access only go lower: disabled < restricted < enabled', () => {
    const loosened = (agent: Record<string, unknown>, session: Record<string, unknown>) =>
      resolveEnvironment(agentDefault({ network: agent }), hosted({ network: session }), DEPLOYMENT).loosened.map((error) => error.field);
    assert.deepEqual(loosened({ access: 'disabled' }, { access: 'enabled' }), ['environment.network.access']);
    assert.deepEqual(loosened({ access: 'disabled' }, { access: 'restricted', allowed_domains: ['a.com'] }), ['environment.network.access']);
    assert.deepEqual(loosened({ access: 'restricted', allowed_domains: ['a.com'] }, { access: 'enabled' }), ['environment.network.access']);
    assert.deepEqual(loosened({ access: 'enabled' }, { access: 'restricted', blocked_domains: ['x.com'] }), []);
    assert.deepEqual(loosened({ access: 'restricted', allowed_domains: ['a.com'] }, { access: 'disabled' }), []);
    // An agent that says nothing of the network has it disabled.
    assert.deepEqual(resolveEnvironment(agentDefault({}), hosted({ network: { access: 'enabled' } }), DEPLOYMENT).loosened.map((error) => error.field), ['environment.network.access']);
  });

  it('keeps restricted within the agent: allowed domains inside its own, its blocked domains still blocked', () => {
    const agent = { access: 'restricted', allowed_domains: ['example.com', 'pypi.org'], blocked_domains: ['secret.example.com'] };
    const loosened = (session: Record<string, unknown>) => resolveEnvironment(agentDefault({ network: agent }), hosted({ network: session }), DEPLOYMENT).loosened.map((error) => error.field);
    assert.deepEqual(loosened({ access: 'restricted', allowed_domains: ['api.example.com'], blocked_domains: ['secret.example.com'] }), []);
    assert.deepEqual(loosened({ access: 'restricted', allowed_domains: ['pypi.org', 'evil.com'], blocked_domains: ['example.com'] }), ['environment.network.allowed_domains[1]']);
    assert.deepEqual(loosened({ access: 'restricted', allowed_domains: ['pypi.org'] }), ['environment.network.blocked_domains']);
    assert.deepEqual(loosened({ access: 'restricted', blocked_domains: ['secret.example.com'] }), ['environment.network.allowed_domains']);
    // An agent restricted by blocked domains only: the session may add allowed domains, must keep the blocks.
    const blocking = agentDefault({ network: { access: 'restricted', blocked_domains: ['x.com'] } });
    assert.deepEqual(resolveEnvironment(blocking, hosted({ network: { access: 'restricted', allowed_domains: ['a.com'], blocked_domains: ['x.com', 'y.com'] } }), DEPLOYMENT).loosened, []);
  });

  it('holds each limit at most the agent\'s, and every limit at most the current ceiling', () => {
    const agent = agentDefault({ limits: { timeout_s: 60, memory_mb: 4096 } });
    const over = resolveEnvironment(agent, hosted({ limits: { timeout_s: 61, cpu_s: 3600, memory_mb: 1024 } }), DEPLOYMENT);
    assert.deepEqual(over.loosened.map((error) => error.field), ['environment.limits.timeout_s']);
    const under = resolveEnvironment(agent, hosted({ limits: { timeout_s: 30 } }), DEPLOYMENT).environment;
    assert.deepEqual(under?.limits, { timeout_s: 30, cpu_s: 300, memory_mb: 4096, processes: 256, disk_mb: 1024 });
    // An agent saved under a higher ceiling gets no more than the deployment allows today.
    const lowered = resolveEnvironment(agent, undefined, { defaults: DEFAULTS, ceilings: { ...CEILINGS, memoryMb: 3000 } }).environment;
    assert.equal(lowered?.limits.memory_mb, 3000);
  });

  it('reads a saved agent default: none is no default, network disabled unless said, over-ceiling limits and self_hosted named', () => {
    assert.equal(parseAgentDefinition({ name: 'a', environment: { type: 'none' } }).definition?.environment, null);
    assert.equal(parseAgentDefinition({ name: 'a' }).definition?.environment, null);
    assert.deepEqual(agentDefault({}).network, { access: 'disabled' });
    const bad = parseAgentDefinition({ name: 'a', environment: { type: 'openai_hosted', limits: { processes: 4096 }, env: { K: '***' }, skills: [] } }, CEILINGS);
    assert.deepEqual(bad.errors.map((error) => error.field).sort(), ['environment.env.K', 'environment.limits.processes', 'environment.skills']);
    assert.deepEqual(parseAgentDefinition({ name: 'a', environment: { type: 'self_hosted' } }).errors.map((error) => error.field), ['environment.type']);
  });
});

describe('the session resource\'s environment', () => {
  it('shows none, or the hosted shape: env names sorted without values, setup commands counted, absolute file paths', () => {
    assert.deepEqual(environmentView(null, 'w1'), { type: 'none' });
    const { environment } = resolveEnvironment(null, hosted({ env: { Z: 'secret', A: 'secret' }, setup_commands: ['echo secret'], files: [{ type: 'file_id', file_id: FILE, path: 'd/x.csv' }] }), DEPLOYMENT);
    const view = environmentView(environment, 'w1');
    assert.ok(!JSON.stringify(view).includes('secret'));
    assert.deepEqual(view, {
      type: 'openai_hosted',
      id: 'w1',
      network: { access: 'disabled', allowed_domains: [], blocked_domains: [] },
      env_names: ['A', 'Z'],
      files: [{ type: 'file_id', id: FILE, file_id: FILE, path: '/workspace/d/x.csv' }],
      setup_command_count: 1,
      limits: { timeout_s: 120, cpu_s: 300, memory_mb: 2048, processes: 256, disk_mb: 1024 },
      capability_directories: [],
      packages: { npm: [], python: [], system: [] },
      plugins: [],
      skills: [],
    });
  });
});
