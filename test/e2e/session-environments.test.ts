import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { before, describe, it } from 'node:test';
import { putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, http, newKey } from '../support/http.js';
import { call, newProductUser } from '../support/identity.js';

/**
 * The `environment` param of session create and of saved agents, through the public API: what is
 * stored and shown, what is refused (and that nothing is stored then), an agent's default and how
 * a session may only tighten it, a tree member carrying its root's, and a deployment without a
 * sandbox runtime. The sandbox itself is not involved: no session here runs a command.
 */
const SECRET = `s3cret-${randomUUID()}`;

const create = (body: Record<string, unknown>, key = newKey('env')) => http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', ...body }, idempotencyKey: key });
const hosted = (fields: Record<string, unknown> = {}) => ({ type: 'openai_hosted', ...fields });

/** The fields a 422 names. */
function fieldsOf(res: { status: number; text: string; body: any }, code = 'validation_failed'): string[] {
  assert.equal(res.status, 422, res.text);
  assert.equal(res.body.error.code, code, res.text);
  return (res.body.error.details.fields ?? []).map((field: { field: string }) => field.field);
}

/** The sessions carrying this metadata tag (what a refused create must not have stored). */
async function tagged(tag: string): Promise<number> {
  const res = await http(`${API}/sessions?metadata[tag]=${tag}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.length;
}

describe('session environments: the environment param', () => {
  let draftId: string;
  before(async () => {
    draftId = (await uploadDraft('a,b\n1,2\n', 'input.csv')).id;
  });

  it('creates a session with an openai_hosted environment and shows it: effective limits, env names without values, setup commands counted', async () => {
    const environment = hosted({
      network: { access: 'restricted', allowed_domains: ['PyPI.org'] },
      env: { API_TOKEN: SECRET, LANG: 'C.UTF-8' },
      files: [{ type: 'file_id', file_id: draftId, path: 'data/input.csv' }],
      setup_commands: [`echo ${SECRET}`, { command: 'make', cwd: '/workspace/data' }],
      limits: { timeout_s: 30, memory_mb: 512 },
    });
    const tag = randomUUID();
    const res = await create({ environment, metadata: { tag } });
    assert.equal(res.status, 201, res.text);
    const expected = {
      type: 'openai_hosted',
      id: res.body.id,
      network: { access: 'restricted', allowed_domains: ['pypi.org'], blocked_domains: [] },
      env_names: ['API_TOKEN', 'LANG'],
      files: [{ type: 'file_id', id: draftId, file_id: draftId, path: '/workspace/data/input.csv' }],
      setup_command_count: 2,
      // The deployment's defaults where the session asked for nothing (SANDBOX_* unset in the test stack).
      limits: { timeout_s: 30, cpu_s: 300, memory_mb: 512, processes: 256, disk_mb: 1024 },
      capability_directories: [],
      packages: { npm: [], python: [], system: [] },
      plugins: [],
      skills: [],
    };
    assert.deepEqual(res.body.environment, expected);
    assert.ok(!res.text.includes(SECRET), 'neither an env value nor a setup command is echoed');
    const read = await http(`${API}/sessions/${res.body.id}`);
    assert.deepEqual(read.body.environment, expected);
    assert.ok(!read.text.includes(SECRET));
    const listed = await http(`${API}/sessions?metadata[tag]=${tag}`);
    assert.deepEqual(listed.body.data.find((session: any) => session.id === res.body.id)?.environment, expected);

    // Without network, env and the rest: network disabled, all defaults. `none` stays none.
    const plain = await create({ environment: hosted() });
    assert.deepEqual(plain.body.environment.network, { access: 'disabled', allowed_domains: [], blocked_domains: [] });
    assert.deepEqual([plain.body.environment.env_names, plain.body.environment.files, plain.body.environment.setup_command_count], [[], [], 0]);
    assert.deepEqual((await create({ environment: { type: 'none' } })).body.environment, { type: 'none' });
    assert.deepEqual((await create({})).body.environment, { type: 'none' });
  });

  it('refuses each upstream field this deployment does not support by name, self_hosted as unavailable, and stores nothing', async () => {
    const unsupported: Record<string, unknown> = {
      desktop: { enabled: true },
      skills: [{ type: 'skill_reference', skill_id: 'x' }],
      plugins: [],
      packages: { python: ['numpy'] },
      container_size: 'large',
      environment_template_id: 'tmpl_1',
      environment_id: 'env_1',
    };
    const tag = randomUUID();
    for (const [field, value] of Object.entries(unsupported)) {
      assert.deepEqual(fieldsOf(await create({ environment: hosted({ [field]: value }), metadata: { tag } })), [`environment.${field}`], field);
    }
    const self = await create({ environment: { type: 'self_hosted', workspace_directory: '/workspace' }, metadata: { tag } });
    assert.equal(self.status, 422, self.text);
    assert.equal(self.body.error.code, 'environment_unavailable', self.text);
    assert.deepEqual(fieldsOf(await create({ environment: { type: 'docker' }, metadata: { tag } })), ['environment.type']);
    assert.equal(await tagged(tag), 0);
  });

  it('bounds what it takes: limits up to the ceiling, env names, paths in the workspace, domains; a file that is not the caller\'s is 404', async () => {
    const tag = randomUUID();
    const refused = async (environment: Record<string, unknown>) => fieldsOf(await create({ environment: hosted(environment), metadata: { tag } }));
    assert.deepEqual(await refused({ limits: { timeout_s: 1801, processes: 0 } }), ['environment.limits.timeout_s', 'environment.limits.processes']);
    assert.deepEqual(await refused({ env: { 'BAD-NAME': 'x', '9X': 'y', OK: 'z' } }), ['environment.env.BAD-NAME', 'environment.env.9X']);
    for (const path of ['../outside.txt', 'a/../../b', '/etc/passwd', 'attachments/x.csv']) {
      assert.deepEqual(await refused({ files: [{ type: 'file_id', file_id: draftId, path }] }), ['environment.files[0].path'], path);
    }
    assert.deepEqual(await refused({ network: { access: 'restricted', allowed_domains: ['*.example.com', '169.254.169.254'] } }), [
      'environment.network.allowed_domains[0]',
      'environment.network.allowed_domains[1]',
    ]);
    assert.deepEqual(await refused({ network: { access: 'disabled', allowed_domains: ['example.com'] } }), ['environment.network.allowed_domains']);
    assert.deepEqual(await refused({ setup_commands: Array.from({ length: 21 }, () => 'true') }), ['environment.setup_commands']);

    // Another caller's file, and an id nobody has: 404 as for attachments.
    const other = await newProductUser('environment file owner');
    const theirs = await uploadDraft('theirs', 'theirs.txt', { token: other.caller.token });
    for (const fileId of [theirs.id, '0'.repeat(32)]) {
      const res = await create({ environment: hosted({ files: [{ type: 'file_id', file_id: fileId, path: 'x.txt' }] }), metadata: { tag } });
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.error.details.file_id, fileId, res.text);
    }
    assert.equal(await tagged(tag), 0, 'nothing refused is stored');
  });

  it('takes the environment into the idempotency intent: the same key with another environment is a conflict', async () => {
    const key = newKey('env-intent');
    const first = await create({ environment: hosted({ limits: { timeout_s: 10 } }) }, key);
    assert.equal(first.status, 201, first.text);
    assert.equal((await create({ environment: hosted({ limits: { timeout_s: 10 } }) }, key)).body.id, first.body.id);
    const other = await create({ environment: hosted({ limits: { timeout_s: 11 } }) }, key);
    assert.equal(other.status, 409, other.text);
    assert.equal(other.body.error.code, 'idempotency_conflict');
  });
});

describe('session environments: an agent default, which a session may only tighten', () => {
  let agentId: string;
  before(async () => {
    const put = await putAgent({
      model: 'scripted:echo',
      environment: hosted({ network: { access: 'restricted', allowed_domains: ['example.com'] }, env: { A: SECRET, B: 'agent' }, setup_commands: ['agent-setup'], limits: { timeout_s: 60 } }),
    });
    agentId = put.id;
    // The agent's resource shows its default with env values redacted.
    assert.deepEqual(put.agent.yuxi.environment.env, { A: '***', B: '***' });
    assert.ok(!JSON.stringify(put.agent).includes(SECRET));
  });
  const withAgent = (body: Record<string, unknown>) => create({ agent_id: agentId, ...body });

  it('gives the agent default when the session says nothing, none when it asks for none, and merges a tighter one', async () => {
    const inherited = await withAgent({});
    assert.equal(inherited.status, 201, inherited.text);
    assert.deepEqual(inherited.body.environment.network, { access: 'restricted', allowed_domains: ['example.com'], blocked_domains: [] });
    assert.deepEqual([inherited.body.environment.env_names, inherited.body.environment.setup_command_count, inherited.body.environment.limits.timeout_s], [['A', 'B'], 1, 60]);

    assert.deepEqual((await withAgent({ environment: { type: 'none' } })).body.environment, { type: 'none' });

    const tighter = await withAgent({ environment: hosted({ network: { access: 'restricted', allowed_domains: ['api.example.com'] }, env: { B: 'session', C: 'x' }, setup_commands: ['mine'], limits: { timeout_s: 20 } }) });
    assert.equal(tighter.status, 201, tighter.text);
    assert.deepEqual(tighter.body.environment.network.allowed_domains, ['api.example.com']);
    assert.deepEqual([tighter.body.environment.env_names, tighter.body.environment.setup_command_count, tighter.body.environment.limits.timeout_s], [['A', 'B', 'C'], 2, 20]);
    const disabled = await withAgent({ environment: hosted({ network: { access: 'disabled' } }) });
    assert.equal(disabled.body.environment.network.access, 'disabled', disabled.text);
  });

  it('refuses a session that loosens it, naming each field, and stores nothing', async () => {
    const tag = randomUUID();
    const loosened = async (environment: Record<string, unknown>) => fieldsOf(await withAgent({ environment: hosted(environment), metadata: { tag } }), 'environment_loosened');
    assert.deepEqual(await loosened({ network: { access: 'enabled' } }), ['environment.network.access']);
    assert.deepEqual(await loosened({ network: { access: 'restricted', allowed_domains: ['example.com', 'evil.com'] } }), ['environment.network.allowed_domains[1]']);
    assert.deepEqual(await loosened({ limits: { timeout_s: 61 } }), ['environment.limits.timeout_s']);
    assert.equal(await tagged(tag), 0);
  });

  it('validates an agent default as a session param: no files on an agent, limits up to the ceiling, unsupported fields named', async () => {
    const put = (environment: unknown) => http(`/api/v1/admin/agents/t-${randomUUID().slice(0, 8)}`, { method: 'PUT', body: { name: 'env agent', environment } });
    const res = await put(hosted({ files: [{ type: 'file_id', file_id: '0'.repeat(32), path: 'x' }], limits: { memory_mb: 8193 }, packages: { npm: ['x'] } }));
    assert.deepEqual(fieldsOf(res, 'invalid_agent').sort(), ['environment.files', 'environment.limits.memory_mb', 'environment.packages']);
    assert.deepEqual(fieldsOf(await put({ type: 'self_hosted' }), 'invalid_agent'), ['environment.type']);
    // A definition read back (values shown as ***) and sent again is refused, not saved with *** as the value.
    assert.deepEqual(fieldsOf(await put(hosted({ env: { A: '***' } })), 'invalid_agent'), ['environment.env.A']);
  });

  it('gives a tree member its root\'s environment', async () => {
    const coordinator = await putAgent({ model: 'scripted:echo', multi_agent: { enabled: true }, environment: hosted({ env: { FROM_AGENT: 'x' }, limits: { processes: 64 } }) });
    const root = await create({ agent_id: coordinator.id, input: '[[tool:create_subagent {"task":"say hi","name":"m"}]]' });
    assert.equal(root.status, 201, root.text);
    let member: any;
    for (let i = 0; i < 300 && !member; i += 1) {
      member = (await http(`${API}/sessions?root_session_id=${root.body.id}`)).body.data.find((session: any) => session.id !== root.body.id);
      if (!member) await sleep(100);
    }
    assert.ok(member, 'the coordinator created its member');
    assert.deepEqual(member.environment, root.body.environment);
    assert.deepEqual(member.environment.env_names, ['FROM_AGENT']);
  });
});

describe('session environments: a deployment without a sandbox runtime', () => {
  it('refuses openai_hosted (and an agent default) with environment_unavailable; none still works', async () => {
    // The file-limits replica runs with SANDBOX_RUNTIME=none (scripts/test.mjs).
    const createThere = (body: Record<string, unknown>) =>
      call({ name: 'bootstrap', token: env.apiKey }, `${API}/sessions`, { baseUrl: env.apiUrlFileLimits, body: { agent_id: 'default-chatbot', ...body }, idempotencyKey: newKey('none-runtime') });
    const refused = await createThere({ environment: hosted({ network: { access: 'disabled' } }) });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'environment_unavailable', refused.text);
    const agent = await putAgent({ model: 'scripted:echo', environment: hosted() });
    const byDefault = await createThere({ agent_id: agent.id });
    assert.equal(byDefault.body?.error?.code, 'environment_unavailable', byDefault.text);
    const none = await createThere({ agent_id: agent.id, environment: { type: 'none' } });
    assert.equal(none.status, 201, none.text);
    assert.deepEqual(none.body.environment, { type: 'none' });
  });
});
