// Launches the whole stack (infrastructure, migrations, api and worker as separate processes)
// for `npm start`, the test runner and the benchmarks.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, runSync } from './build.mjs';
import { ensureBubblewrap, freePort, startInfra } from './infra.mjs';

/**
 * A stack on one machine delivers webhooks to, and calls MCP servers on, that machine (plain http
 * included); a deployment (images, docker/.env.example) refuses private targets unless told
 * otherwise. What the environment says explicitly (`false` included) always holds.
 * @param {Record<string, string|undefined>} env
 */
export function localNetworkDefaults(env) {
  return {
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: env.WEBHOOK_ALLOW_PRIVATE_NETWORKS ?? 'true',
    MCP_ALLOW_PRIVATE_NETWORKS: env.MCP_ALLOW_PRIVATE_NETWORKS ?? 'true',
  };
}

/** Restart back-off of a crashed api or worker (`restart: true`): 0.5 s, doubling up to 30 s. */
export const RESTART_POLICY = { initialMs: 500, maxMs: 30_000, resetAfterMs: 60_000 };

/**
 * @param {object} options
 * @param {string} options.dataDir where Postgres/Redis keep data
 * @param {boolean} [options.ephemeral] throw the data away on stop
 * @param {number} [options.port] api port (a free one when omitted)
 * @param {Record<string,string>} [options.env] extra environment for api and worker
 * @param {string|null} [options.logDir] write process output to files here instead of the console
 * @param {boolean} [options.useEnvUrls] use DATABASE_URL / REDIS_URL when set (default); false starts
 *   Postgres and Redis of its own whatever the environment says (a test next to the suite's stack)
 * @param {boolean | {initialMs?: number, maxMs?: number, resetAfterMs?: number}} [options.restart]
 *   once the stack is up, restart an api or worker that exits (crash, kill) after a back-off that
 *   doubles per crash up to maxMs and starts over once the process ran resetAfterMs; never while
 *   stopping. Off by default (tests want a death to show); `npm start` turns it on.
 * @param {AbortSignal} [options.signal] aborting it during the start stops what was started and
 *   rejects (Ctrl-C while `npm start` is still starting)
 * @param {boolean} [options.orphanGuard] start scripts/lib/orphan-guard.mjs beside the stack: should
 *   this process die without stopping the stack (SIGKILL), it stops api, worker, Redis and Postgres
 *   (`npm start` turns it on; tests that own the stack's process have their own clean-up)
 * @returns {Promise<{url: string, env: Record<string,string>, infra: object, children: object[],
 *   child: (name: string) => object|undefined, stop: () => Promise<void>}>} `children` holds the
 *   processes running now (a restart replaces its entry); `child(name)` the current one of a name
 */
export async function startStack({ dataDir, ephemeral = false, port, env: extraEnv = {}, logDir = null, log = console.log, restart = false, useEnvUrls = true, signal, orphanGuard = false }) {
  signal?.throwIfAborted();
  // The worker runs sessions' commands in bubblewrap sandboxes unless told there are none.
  if ((extraEnv.SANDBOX_RUNTIME ?? process.env.SANDBOX_RUNTIME ?? 'bwrap') === 'bwrap') ensureBubblewrap(log);
  const guard = orphanGuard ? startOrphanGuard() : null;
  let infra;
  try {
    infra = await startInfra({ dataDir, ephemeral, log, useEnvUrls });
  } catch (error) {
    guard?.done(); // startInfra stopped what it had started
    throw error;
  }
  const apiPort = port ?? (await freePort());
  const env = {
    ...process.env,
    API_KEY_HASH_SECRET: process.env.API_KEY_HASH_SECRET ?? apiKeyHashSecret(dataDir, ephemeral),
    SECRETS_KEY: process.env.SECRETS_KEY ?? generatedKey(dataDir, ephemeral, 'secrets-key'),
    DATABASE_URL: infra.databaseUrl,
    REDIS_URL: infra.redisUrl,
    PORT: String(apiPort),
    // api and worker share uploaded files through this directory (unless STORAGE_DRIVER=s3).
    STORAGE_DIR: process.env.STORAGE_DIR ?? path.join(dataDir, 'files'),
    ...localNetworkDefaults(process.env),
    // The scripted demo models answer without a provider: a stack on one machine offers them, a
    // deployment (images, docker/.env.example) does not unless told to.
    SCRIPTED_MODELS: process.env.SCRIPTED_MODELS ?? 'enabled',
    ...extraEnv,
  };
  const children = [];
  // Every pid the stack holds, each time one starts (a restart included) and each time an api or
  // worker exits (its pid, free for the system to reuse during a restart back-off, is left out),
  // with each process's start time, which the guard checks before it signals a pid.
  const told = new WeakSet();
  const tellGuard = () => {
    if (!guard) return;
    const pids = { redis: infra.redis?.pid ?? null, postgres: infra.postgres?.pid ?? null };
    for (const child of children) {
      if (!told.has(child)) {
        told.add(child);
        void child.exited.then(tellGuard);
      }
      if (child.exitCode === null && child.signalCode === null) pids[child.name] = child.pid ?? null;
    }
    const starts = {};
    for (const [name, pid] of Object.entries(pids)) {
      const start = pid ? processStartTime(pid) : null;
      if (start !== null) starts[name] = start;
    }
    guard.tell(pids, starts);
  };
  tellGuard();
  const supervisors = [];
  let stopping = null;
  const stop = () =>
    (stopping ??= (async () => {
      // No restart from here on: a child that exits now was stopped on purpose.
      for (const supervisor of supervisors) supervisor.cancel();
      // api and worker first, while Postgres and Redis are still there for their graceful close.
      if (children.length > 0) {
        await Promise.all(children.map((child) => stopChild(child, STOP_GRACE_MS, log)));
        log(`[stack] api and worker stopped${infra.redis || infra.postgres ? '; stopping Redis and Postgres…' : ''}`);
      }
      await infra.stop();
      guard?.done();
    })());
  try {
    signal?.throwIfAborted();
    log('[stack] migrating the database…');
    runSync(process.execPath, [SCRIPTS.migrate], env);
    signal?.throwIfAborted();
    if (logDir) mkdirSync(logDir, { recursive: true });
    const launched = Date.now();
    log('[stack] starting the api and the worker (about 10 s)…');
    children.push(launch('api', SCRIPTS.api, env, logDir));
    children.push(launch('worker', SCRIPTS.worker, env, logDir));
    tellGuard();
    const url = `http://127.0.0.1:${apiPort}`;
    // A process that dies during start-up fails the start (a configuration error would only crash again).
    await waitForHealth(`${url}/health`, children, 60_000, signal);
    log(`[stack] api answering on ${url} (${((Date.now() - launched) / 1000).toFixed(1)} s)`);
    if (restart) {
      const policy = { ...RESTART_POLICY, ...(typeof restart === 'object' ? restart : {}) };
      for (const child of [...children]) {
        supervisors.push(supervise(child, { children, env, logDir, log, policy, stopping: () => stopping !== null, restarted: tellGuard }));
      }
    }
    return { url, env, infra, children, child: (name) => children.find((child) => child.name === name), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Keeps one api or worker running: when its process exits (and the stack is not stopping), says
 * so and starts it again after the back-off, in the same slot of `children`.
 */
function supervise(first, { children, env, logDir, log, policy, stopping, restarted }) {
  const { name } = first;
  const script = SCRIPTS[name];
  let crashes = 0;
  let timer = null;
  let cancelled = false;
  const watch = (child) => {
    const startedAt = Date.now();
    void child.exited.then(({ code, signal }) => {
      if (cancelled || stopping()) return;
      // A process that ran long enough before it died starts the back-off over.
      if (Date.now() - startedAt >= policy.resetAfterMs) crashes = 0;
      const delayMs = Math.min(policy.initialMs * 2 ** crashes, policy.maxMs);
      crashes += 1;
      log(`[stack] ${name} (pid ${child.pid}) exited (code ${code}, signal ${signal}); restarting it in ${formatDelay(delayMs)} (restart ${crashes})`);
      timer = setTimeout(() => {
        timer = null;
        if (cancelled || stopping()) return;
        const next = launch(name, script, env, logDir, { append: true });
        const slot = children.indexOf(child);
        if (slot === -1) children.push(next);
        else children[slot] = next;
        restarted();
        log(`[stack] ${name} restarted (pid ${next.pid})`);
        watch(next);
      }, delayMs);
    });
  };
  watch(first);
  return {
    cancel() {
      cancelled = true;
      if (timer) clearTimeout(timer);
      timer = null;
    },
  };
}

function formatDelay(ms) {
  return ms < 1000 ? `${ms} ms` : `${ms / 1000} s`;
}

/** The entry points of the two processes, relative to the project root (built by ensureBuilt). */
/**
 * The keyed-hash secret of API keys must outlive restarts (stored keys are verified with it): a
 * persistent dev stack keeps a generated one in its data directory.
 */
function apiKeyHashSecret(dataDir, ephemeral) {
  return generatedKey(dataDir, ephemeral, 'api-key-hash-secret');
}

/** A random key kept in the data directory (the same on every start), or a fresh one for an ephemeral stack. */
function generatedKey(dataDir, ephemeral, name) {
  if (ephemeral) return randomBytes(32).toString('base64url');
  const file = path.join(dataDir, name);
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600 });
  }
  return readFileSync(file, 'utf8').trim();
}

export const SCRIPTS = { api: 'dist/apps/api/src/main.js', worker: 'dist/apps/worker/src/main.js', migrate: 'dist/libs/database/src/migrate.js' };

/**
 * Spawns one node process (api, worker) from the project root. Output goes to `<logDir>/<name>.log`
 * when logDir is set (appended to with `append`, as a restart does), else to the console prefixed
 * with the name. The child gets `name` and `exited` (a promise of `{code, signal}`).
 */
export function launch(name, script, env, logDir, { append = false } = {}) {
  // STACK_NODE_ARGS: extra node flags for api and worker (e.g. --cpu-prof for profiling runs).
  const extra = (env.STACK_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, ['--enable-source-maps', ...extra, script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.name = name;
  if (logDir) {
    const file = createWriteStream(path.join(logDir, `${name}.log`), { flags: append ? 'a' : 'w' });
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

/** How long an api or worker has to exit after SIGTERM before it is killed. */
export const STOP_GRACE_MS = 15_000;

/**
 * SIGTERM (after SIGCONT, in case a test stopped it), then SIGKILL after `graceMs` (a process
 * whose event loop is stuck never runs its SIGTERM handler); `log` says when it had to be killed.
 */
export async function stopChild(child, graceMs = STOP_GRACE_MS, log = null) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timeout = setTimeout(() => {
    child.kill('SIGKILL');
    log?.(`[stack] ${child.name} (pid ${child.pid}) did not stop within ${graceMs / 1000} s of SIGTERM: killed it (SIGKILL)`);
  }, graceMs);
  await child.exited;
  clearTimeout(timeout);
}

/**
 * A process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot): with the pid, it
 * names one process, where a pid alone may be reused once that process has exited. Null where
 * there is no /proc (macOS) or the process is gone.
 */
export function processStartTime(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After the command name, which may hold spaces and parentheses: fields 3 onwards.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/**
 * Starts scripts/lib/orphan-guard.mjs in a process group of its own, its stdin a pipe from this
 * process: the pipe closes however this process ends, and the guard then stops what is still
 * running unless it was told `done`.
 */
function startOrphanGuard() {
  const guard = spawn(process.execPath, [path.join(ROOT, 'scripts', 'lib', 'orphan-guard.mjs')], {
    cwd: ROOT,
    detached: true,
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  guard.unref();
  guard.stdin.on('error', () => {});
  const write = (message) => {
    if (!guard.stdin.writable) return;
    guard.stdin.write(`${JSON.stringify(message)}\n`);
  };
  return {
    pid: guard.pid,
    tell: (pids, starts) => write({ pids, starts }),
    done: () => {
      write({ done: true });
      guard.stdin.end();
    },
  };
}

/** Polls `url` until it answers 2xx; fails at once when one of `children` exits, or `signal` aborts. */
export async function waitForHealth(url, children, timeoutMs, signal) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    signal?.throwIfAborted();
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
