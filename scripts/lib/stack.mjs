// Launches the whole stack (infrastructure, migrations, api and worker as separate processes)
// for `npm start`, the test runner and the benchmarks.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, runSync } from './build.mjs';
import { freePort, startInfra } from './infra.mjs';

/**
 * @param {object} options
 * @param {string} options.dataDir where Postgres/Redis keep data
 * @param {boolean} [options.ephemeral] throw the data away on stop
 * @param {number} [options.port] api port (a free one when omitted)
 * @param {Record<string,string>} [options.env] extra environment for api and worker
 * @param {string|null} [options.logDir] write process output to files here instead of the console
 */
export async function startStack({ dataDir, ephemeral = false, port, env: extraEnv = {}, logDir = null, log = console.log }) {
  const infra = await startInfra({ dataDir, ephemeral, log });
  const apiPort = port ?? (await freePort());
  const env = {
    ...process.env,
    API_KEY_HASH_SECRET: process.env.API_KEY_HASH_SECRET ?? apiKeyHashSecret(dataDir, ephemeral),
    DATABASE_URL: infra.databaseUrl,
    REDIS_URL: infra.redisUrl,
    PORT: String(apiPort),
    ...extraEnv,
  };
  const children = [];
  const stop = async () => {
    await Promise.all(children.map((child) => stopChild(child)));
    await infra.stop();
  };
  try {
    runSync(process.execPath, [SCRIPTS.migrate], env);
    if (logDir) mkdirSync(logDir, { recursive: true });
    children.push(launch('api', SCRIPTS.api, env, logDir));
    children.push(launch('worker', SCRIPTS.worker, env, logDir));
    const url = `http://127.0.0.1:${apiPort}`;
    await waitForHealth(`${url}/health`, children, 60_000);
    return { url, env, infra, children, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The entry points of the two processes, relative to the project root (built by ensureBuilt). */
/**
 * The keyed-hash secret of API keys must outlive restarts (stored keys are verified with it): a
 * persistent dev stack keeps a generated one in its data directory.
 */
function apiKeyHashSecret(dataDir, ephemeral) {
  if (ephemeral) return randomBytes(32).toString('base64url');
  const file = path.join(dataDir, 'api-key-hash-secret');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

export const SCRIPTS = { api: 'dist/apps/api/src/main.js', worker: 'dist/apps/worker/src/main.js', migrate: 'dist/libs/database/src/migrate.js' };

/**
 * Spawns one node process (api, worker) from the project root. Output goes to `<logDir>/<name>.log`
 * when logDir is set, else to the console prefixed with the name. The child gets `name` and
 * `exited` (a promise of `{code, signal}`).
 */
export function launch(name, script, env, logDir) {
  // STACK_NODE_ARGS: extra node flags for api and worker (e.g. --cpu-prof for profiling runs).
  const extra = (env.STACK_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, ['--enable-source-maps', ...extra, script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.name = name;
  if (logDir) {
    const file = createWriteStream(path.join(logDir, `${name}.log`));
    child.stdout.pipe(file);
    child.stderr.pipe(file);
  } else {
    const prefix = (chunk) => chunk.toString().replace(/^(?=.)/gm, `[${name}] `);
    child.stdout.on('data', (chunk) => process.stdout.write(prefix(chunk)));
    child.stderr.on('data', (chunk) => process.stderr.write(prefix(chunk)));
  }
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return child;
}

/** SIGTERM (after SIGCONT, in case a test stopped it), then SIGKILL after `graceMs`. */
export async function stopChild(child, graceMs = 15_000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timeout = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(timeout);
}

/** Polls `url` until it answers 2xx; fails at once when one of `children` exits. */
export async function waitForHealth(url, children, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = children.find((child) => child.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited with code ${dead.exitCode} during start-up`);
    // (a child killed by a signal has exitCode null and signalCode set)
    const killed = children.find((child) => child.signalCode !== null);
    if (killed) throw new Error(`${killed.name} was killed by ${killed.signalCode} during start-up`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`api did not become healthy within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
