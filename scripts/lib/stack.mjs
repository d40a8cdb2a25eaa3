// Launches the whole stack (infrastructure, migrations, api and worker as separate processes)
// for `npm start`, the test runner and the benchmarks.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
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
    runSync(process.execPath, ['dist/libs/database/src/migrate.js'], env);
    if (logDir) mkdirSync(logDir, { recursive: true });
    children.push(launch('api', 'dist/apps/api/src/main.js', env, logDir));
    children.push(launch('worker', 'dist/apps/worker/src/main.js', env, logDir));
    const url = `http://127.0.0.1:${apiPort}`;
    await waitForHealth(`${url}/health`, children, 60_000);
    return { url, env, infra, children, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

function launch(name, script, env, logDir) {
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

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timeout = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await child.exited;
  clearTimeout(timeout);
}

async function waitForHealth(url, children, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = children.find((child) => child.exitCode !== null);
    if (dead) throw new Error(`${dead.name} exited with code ${dead.exitCode} during start-up`);
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
