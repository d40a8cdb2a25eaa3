import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, bootstrap, call } from '../support/identity.js';
import { type AppChild, loadFromRoot as load, ROOT, type StackModule } from '../support/stack-scripts.js';

// An api replica configured as a deployment is by default (the suite's stack turns scripted models
// on): scripted models off, and a model allowlist. It shares the suite's database and Redis, so
// the agents saved through the suite's replica are the ones it serves. Only the processes started
// here are stopped.

const LOG_DIR = path.join(ROOT, '.data', 'test-logs');
const ALLOWED = 'openai:gpt-allowed';

interface InfraModule {
  freePort(): Promise<number>;
}

/** The suite's environment without what makes it a development stack. */
function deploymentEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  // The fixture agents name scripted models: a deployment without them would refuse the file.
  for (const name of ['SCRIPTED_MODELS', 'AGENTS_FILE', 'MODEL_ALLOWLIST']) delete base[name];
  return { ...base, ...extra };
}

describe('a deployment\'s defaults: no scripted models, the model allowlist', () => {
  let stack: StackModule;
  let api: AppChild | undefined;
  let url: string;

  before(async () => {
    stack = await load<StackModule>('scripts/lib/stack.mjs');
    const infra = await load<InfraModule>('scripts/lib/infra.mjs');
    const port = await infra.freePort();
    url = `http://127.0.0.1:${port}`;
    api = stack.launch('api-deployment-defaults', stack.SCRIPTS.api, deploymentEnv({ PORT: String(port), MODEL_ALLOWLIST: `${ALLOWED},openai:also-allowed` }), LOG_DIR);
    await stack.waitForHealth(`${url}/health`, [api], 60_000);
  });
  after(async () => {
    if (api) await stack.stopChild(api, 10_000);
  });

  it('refuses scripted models everywhere unless the deployment turns them on', async () => {
    // The suite's replica (scripted on) saves an agent on a scripted model; this one will not run it.
    const agentId = `dep-${randomUUID().slice(0, 8)}`;
    assert.equal((await call(bootstrap, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Scripted', model: 'scripted:echo' } })).status, 201);
    const create = await call(bootstrap, `${API}/sessions`, { body: { agent_id: agentId }, idempotencyKey: newKey('dep'), baseUrl: url });
    assert.equal(create.status, 422, create.text);
    assert.equal(create.body.error.code, 'invalid_model');
    const put = await call(bootstrap, `${ADMIN}/agents/dep-${randomUUID().slice(0, 8)}`, { method: 'PUT', body: { name: 'Scripted', model: 'scripted:echo' }, baseUrl: url });
    assert.equal(put.status, 422, put.text);
    assert.equal(put.body.error.code, 'invalid_agent');
    assert.ok(put.body.error.details.fields.some((f: any) => f.field === 'model'), put.text);
  });

  it('lets nobody, administrators included, name a model outside MODEL_ALLOWLIST', async () => {
    const agentId = `dep-${randomUUID().slice(0, 8)}`;
    const saved = await call(bootstrap, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Allowed', model: ALLOWED }, baseUrl: url });
    assert.equal(saved.status, 201, saved.text);
    const outside = await call(bootstrap, `${ADMIN}/agents/dep-${randomUUID().slice(0, 8)}`, { method: 'PUT', body: { name: 'Outside', model: 'openai:gpt-other' }, baseUrl: url });
    assert.equal(outside.status, 422, outside.text);
    assert.match(JSON.stringify(outside.body.error.details.fields), /MODEL_ALLOWLIST/);

    const refused = await call(bootstrap, `${API}/sessions`, { body: { agent_id: agentId, agent: { model: 'openai:gpt-other' } }, idempotencyKey: newKey('dep'), baseUrl: url });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error.code, 'model_not_allowed');
    const within = await call(bootstrap, `${API}/sessions`, { body: { agent_id: agentId, agent: { model: 'openai:also-allowed' } }, idempotencyKey: newKey('dep'), baseUrl: url });
    assert.equal(within.status, 201, within.text);
    const update = await call(bootstrap, `${API}/sessions/${within.body.id}`, { method: 'POST', body: { agent: { model: 'openai:gpt-other' } }, baseUrl: url });
    assert.equal(update.status, 422, update.text);
    assert.equal(update.body.error.code, 'model_not_allowed');
    // The suite's replica has no allowlist: the same request passes there (the rule is the deployment's).
    const elsewhere = await call(bootstrap, `${API}/sessions/${within.body.id}`, { method: 'POST', body: { agent: { model: 'openai:gpt-other' } }, baseUrl: env.apiUrl });
    assert.equal(elsewhere.status, 200, elsewhere.text);
  });

  it('refuses to start in production without SECRETS_KEY unless unsealed secrets are accepted', async () => {
    const infra = await load<InfraModule>('scripts/lib/infra.mjs');
    const child = stack.launch('api-production-unsealed', stack.SCRIPTS.api, deploymentEnv({ PORT: String(await infra.freePort()), NODE_ENV: 'production', SECRETS_KEY: '' }), LOG_DIR);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = await Promise.race([child.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 30_000))]);
    if (exited === null) await stack.stopChild(child, 5_000);
    assert.ok(exited, 'the process stops by itself');
    assert.notEqual(exited.code, 0);
    assert.match(output, /SECRETS_KEY is required in production/);
  });
});

/** Starts a process of the stack and waits (bounded) for it to exit by itself, with what it printed. */
async function runUntilExit(stack: StackModule, name: string, script: string, processEnv: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = stack.launch(name, script, processEnv, LOG_DIR);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = await Promise.race([child.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 60_000))]);
  if (exited === null) await stack.stopChild(child, 5_000);
  assert.ok(exited, `${name} stops by itself`);
  return { code: exited.code, output };
}

describe('start-up messages that say what to do', () => {
  let stack: StackModule;
  let infra: InfraModule;
  before(async () => {
    stack = await load<StackModule>('scripts/lib/stack.mjs');
    infra = await load<InfraModule>('scripts/lib/infra.mjs');
  });

  it('an api without API_KEY_HASH_SECRET says so in one line, first, and how to set it', async () => {
    const { code, output } = await runUntilExit(stack, 'api-no-hash-secret', stack.SCRIPTS.api, deploymentEnv({ PORT: String(await infra.freePort()), API_KEY_HASH_SECRET: '', LOG_FORMAT: 'pretty' }));
    assert.equal(code, 1);
    const lines = output.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, output);
    assert.match(lines[0]!, /^api cannot start: API_KEY_HASH_SECRET is not set\. Set it to a random secret of at least 32 characters/);
  });

  it('a second worker on a host whose health port is taken names WORKER_HEALTH_PORT, and stops before consuming', async () => {
    const takenPort = new URL(env.workerHealthUrl).port;
    const { code, output } = await runUntilExit(stack, 'worker-second-on-host', stack.SCRIPTS.worker, deploymentEnv({ WORKER_HEALTH_PORT: takenPort, LOG_FORMAT: 'json' }));
    assert.equal(code, 1);
    assert.match(output, new RegExp(`^worker cannot start: its health port ${takenPort} is already in use \\(another worker on this host\\?\\)\\. Give each worker on a host its own WORKER_HEALTH_PORT`, 'm'));
    assert.doesNotMatch(output, /consuming|EADDRINUSE/, 'it stopped before its consumers started, without a stack trace');
    // The worker that holds the port is untouched.
    assert.equal((await fetch(`${env.workerHealthUrl}/health/live`)).status, 200);
  });

  it('pretty logs written to a file carry no colour codes, and route mapping is not logged at info', async () => {
    const port = await infra.freePort();
    const name = 'api-pretty-to-file';
    const child = stack.launch(name, stack.SCRIPTS.api, deploymentEnv({ PORT: String(port), LOG_FORMAT: 'pretty', LOG_COLOR: '', LOG_LEVEL: 'info' }), LOG_DIR);
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await stack.waitForHealth(`http://127.0.0.1:${port}/health`, [child], 60_000);
    } finally {
      await stack.stopChild(child, 10_000);
    }
    assert.match(output, /listening on :\d+/, output);
    assert.ok(!output.includes(`${String.fromCharCode(27)}[`), 'no ANSI escape codes in a file');
    assert.doesNotMatch(output, /Mapped \{|dependencies initialized/, 'start-up chatter is at debug');
  });
});
