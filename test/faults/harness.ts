// The fault suite's harness: it owns real servers and processes so that scenarios can kill, stop
// and restart them. One FaultInfra (embedded Postgres + redis-server, migrated) per test file;
// one Cluster (N api + M worker processes, each with its own port, pid and log file under
// .data/fault-logs/<scenario>/) per scenario.
//
// Rules kept here: only pids this harness spawned are ever signalled (child.pid), all traffic
// goes to 127.0.0.1, every wait is bounded, and teardown always runs (SIGCONT before SIGTERM,
// SIGKILL after a grace period).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { type AppChild, loadFromRoot as load, ROOT, type StackModule } from '../support/stack-scripts.js';
import { Api } from './client.js';


export { ROOT } from '../support/stack-scripts.js';
export const FAULT_LOG_ROOT = path.join(ROOT, '.data', 'fault-logs');

/** Short lease and sweep intervals so takeovers happen within a test's time. */
export const FAULT_ENV = {
  RUN_LEASE_MS: '3000',
  RUN_HEARTBEAT_MS: '1000',
  RECOVERY_SWEEP_MS: '500',
  RECOVERY_GRACE_MS: '1000',
  SSE_HEARTBEAT_MS: '1000',
  // A frozen database fails a query after this long (503), instead of hanging the request.
  DB_QUERY_TIMEOUT_MS: '2000',
  // The scenarios drive scripted models; a deployment has them off unless it turns them on.
  SCRIPTED_MODELS: 'enabled',
  // One bootstrap key drives every scenario of a file, thousands of requests a minute (f's 200
  // cancel races, then g's 1,000 submissions): its key's and its user's limits are out of the way,
  // as in the e2e suite; the limits themselves are tested in test/e2e/fair-shares.test.ts.
  RATE_LIMIT_PER_MINUTE: '1000000',
  USER_RATE_LIMIT_PER_MINUTE: '1000000',
  // The automations scenarios fire schedules every 1-2 s.
  AUTOMATION_MIN_INTERVAL_S: '1',
} as const;
export const RUN_LEASE_MS = Number(FAULT_ENV.RUN_LEASE_MS);
export const RECOVERY_SWEEP_MS = Number(FAULT_ENV.RECOVERY_SWEEP_MS);

// ------------------------------------------------------------------ the scripts/lib modules

interface RedisHandle {
  url: string;
  port: number;
  readonly pid: number | null;
  readonly running: boolean;
  kill(signal?: NodeJS.Signals, timeoutMs?: number): Promise<void>;
  start(): Promise<void>;
}

interface PostgresHandle {
  url: string;
  port: number;
  databaseDir: string;
  readonly pid: number | null;
  readonly running: boolean;
  halt(signal?: NodeJS.Signals, timeoutMs?: number): Promise<void>;
  start(): Promise<void>;
}

interface InfraModule {
  freePort(): Promise<number>;
  startInfra(options: { dataDir: string; ephemeral?: boolean; log?: (...args: unknown[]) => void; useEnvUrls?: boolean }): Promise<{
    databaseUrl: string;
    redisUrl: string;
    stop(): Promise<void>;
    redis: RedisHandle | null;
    postgres: PostgresHandle | null;
  }>;
}

export type { AppChild } from '../support/stack-scripts.js';


const infraModule = () => load<InfraModule>('scripts/lib/infra.mjs');
const stackModule = () => load<StackModule>('scripts/lib/stack.mjs');

// ------------------------------------------------------------------ teardown on abnormal exit

const liveChildren = new Set<AppChild>();
let exitHooksInstalled = false;

/** A test process killed by the runner (timeout, Ctrl-C) must not leave api or worker behind. */
function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  const killAll = () => {
    for (const child of liveChildren) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      // infra.mjs stops Postgres and Redis from its own 'exit' handlers.
      process.exit(130);
    });
  }
}

// Waits, the durable state a scenario ends on and the process tree of a server are in waiting.ts,
// durable-state.ts and process-tree.ts; scenarios import everything from here.
export { delay, waitUntil, within } from './waiting.js';
export { assertInvariants, type InvariantResult, invariantsModule, waitQuiescent } from './durable-state.js';
export { processTree } from './process-tree.js';

// ------------------------------------------------------------------ infrastructure

export interface FaultInfra {
  name: string;
  databaseUrl: string;
  redisUrl: string;
  redis: RedisHandle;
  postgres: PostgresHandle;
  apiKey: string;
  /** A small pool for the tests' own read-only SQL; errors while Postgres is down are expected. */
  db: pg.Pool;
  /** A line in .data/fault-logs/<name>-infra.log. */
  log(...args: unknown[]): void;
  stop(): Promise<void>;
}

/** Embedded Postgres + redis-server on free ports (throwaway data), migrated, for one test file. */
export async function startFaultInfra(name: string): Promise<FaultInfra> {
  installExitHooks();
  const { startInfra } = await infraModule();
  mkdirSync(FAULT_LOG_ROOT, { recursive: true });
  const logFile = path.join(FAULT_LOG_ROOT, `${name}-infra.log`);
  rmSync(logFile, { force: true });
  const log = (...args: unknown[]) => appendFileSync(logFile, `${new Date().toISOString()} ${args.map(String).join(' ')}\n`);
  const infra = await startInfra({
    dataDir: path.join(os.tmpdir(), `yuxi-faults-${process.pid}-${name}`),
    ephemeral: true,
    useEnvUrls: false,
    log,
  });
  if (!infra.redis || !infra.postgres) throw new Error('the fault harness must own its Postgres and Redis');
  const apiKey = `yx_fault_${randomBytes(24).toString('base64url')}`;
  const db = new pg.Pool({ connectionString: infra.databaseUrl, max: 3, connectionTimeoutMillis: 5_000 });
  // Postgres restarts on purpose: a dropped idle client must not crash the test process.
  db.on('error', (error) => log(`[test pool] ${String(error)}`));
  try {
    const { SCRIPTS } = await stackModule();
    await runNode([SCRIPTS.migrate], { ...cleanEnv(), DATABASE_URL: infra.databaseUrl, REDIS_URL: infra.redisUrl }, log, 60_000);
  } catch (error) {
    await db.end().catch(() => undefined);
    await infra.stop();
    throw error;
  }
  return {
    name,
    databaseUrl: infra.databaseUrl,
    redisUrl: infra.redisUrl,
    redis: infra.redis,
    postgres: infra.postgres,
    apiKey,
    db,
    log,
    async stop() {
      await db.end().catch(() => undefined);
      await infra.stop();
    },
  };
}

/** The environment without the caller's own database/redis settings. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'PORT', 'WORKER_HEALTH_PORT', 'BOOTSTRAP_API_KEY', 'TEST_API_URL', 'TEST_API_KEY']) delete env[name];
  return env;
}

/** Runs `node <args>` from the project root, output into the infra log; bounded. */
function runNode(args: string[], env: NodeJS.ProcessEnv, log: (...args: unknown[]) => void, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8000);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      log(`[node ${args.join(' ')}] exit ${code ?? signal}\n${output}`);
      if (code === 0) resolve();
      else reject(new Error(`node ${args.join(' ')} failed (${code ?? signal}):\n${output}`));
    });
  });
}

// ------------------------------------------------------------------ api and worker processes

export interface Proc {
  name: string;
  role: 'api' | 'worker';
  child: AppChild;
  pid: number;
  /** api: HTTP port; worker: health port. */
  port: number;
  url: string;
  logFile: string;
  /** Set between SIGSTOP and SIGCONT, so teardown knows to wake it first. */
  stopped: boolean;
}

export interface WorkerHealth {
  status?: string;
  worker_id?: string;
  fenced_writes?: number;
  fenced_publishes?: number;
  [field: string]: unknown;
}

export interface ClusterOptions {
  apis?: number;
  workers?: number;
  env?: Record<string, string>;
}

/** N api and M worker processes of one scenario over a FaultInfra. */
export class Cluster {
  readonly apis: Proc[] = [];
  readonly workers: Proc[] = [];
  private stopping: Promise<void> | null = null;

  private constructor(
    readonly infra: FaultInfra,
    readonly scenario: string,
    readonly logDir: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly stack: StackModule,
    private readonly freePort: () => Promise<number>,
  ) {}

  static async start(infra: FaultInfra, scenario: string, { apis = 1, workers = 1, env = {} }: ClusterOptions = {}): Promise<Cluster> {
    installExitHooks();
    const stack = await stackModule();
    const { freePort } = await infraModule();
    const logDir = path.join(FAULT_LOG_ROOT, scenario);
    rmSync(logDir, { recursive: true, force: true });
    mkdirSync(logDir, { recursive: true });
    const baseEnv: NodeJS.ProcessEnv = {
      ...cleanEnv(),
      DATABASE_URL: infra.databaseUrl,
      REDIS_URL: infra.redisUrl,
      BOOTSTRAP_API_KEY: infra.apiKey,
      // One keyed-hash secret per cluster: every api replica verifies the same keys.
      API_KEY_HASH_SECRET: `fault-suite-${scenario}-key-hash-secret-0123456789`,
      ...FAULT_ENV,
      ...env,
    };
    const cluster = new Cluster(infra, scenario, logDir, baseEnv, stack, freePort);
    try {
      // Started one after another: on a 2-core machine parallel Nest boots only contend.
      for (let i = 0; i < apis; i++) await cluster.addApi();
      for (let i = 0; i < workers; i++) await cluster.addWorker();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  async addApi(): Promise<Proc> {
    const port = await this.freePort();
    const proc = this.spawnProc('api', this.stack.SCRIPTS.api, { PORT: String(port), WORKER_HEALTH_PORT: '0' }, port, `http://127.0.0.1:${port}`);
    this.apis.push(proc);
    await this.stack.waitForHealth(`${proc.url}/health`, [proc.child], 60_000);
    return proc;
  }

  async addWorker(): Promise<Proc> {
    const port = await this.freePort();
    // PORT too, in case a build of the worker ever binds it; it is never used otherwise.
    const proc = this.spawnProc('worker', this.stack.SCRIPTS.worker, { WORKER_HEALTH_PORT: String(port), PORT: String(await this.freePort()) }, port, `http://127.0.0.1:${port}`);
    this.workers.push(proc);
    await this.stack.waitForHealth(`${proc.url}/health`, [proc.child], 60_000);
    return proc;
  }

  private spawnProc(role: 'api' | 'worker', script: string, env: Record<string, string>, port: number, url: string): Proc {
    const index = (role === 'api' ? this.apis : this.workers).length + 1;
    const name = `${role}-${index}`;
    const child = this.stack.launch(name, script, { ...this.env, ...env }, this.logDir);
    liveChildren.add(child);
    void child.exited.then(() => liveChildren.delete(child));
    if (child.pid === undefined) throw new Error(`${name} did not start`);
    return { name, role, child, pid: child.pid, port, url, logFile: path.join(this.logDir, `${name}.log`), stopped: false };
  }

  /** A client of api number `index` (0-based). */
  api(index = 0): Api {
    const proc = this.apis[index];
    if (!proc) throw new Error(`no api #${index}`);
    return new Api(proc.url, this.infra.apiKey);
  }

  /** Every api as a client, for round-robin traffic. */
  allApis(): Api[] {
    return this.apis.map((_, i) => this.api(i));
  }

  /** Sends `signal` to a process this cluster started (never anything else). */
  signal(proc: Proc, signal: NodeJS.Signals): void {
    if (!this.apis.includes(proc) && !this.workers.includes(proc)) throw new Error(`${proc.name} is not part of this cluster`);
    if (!isAlive(proc)) return;
    proc.child.kill(signal);
    if (signal === 'SIGSTOP') proc.stopped = true;
    if (signal === 'SIGCONT') proc.stopped = false;
  }

  /** Resolves with how the process ended and how long after the call, or null after `timeoutMs`. */
  async waitExit(proc: Proc, timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number } | null> {
    const t0 = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      proc.child.exited,
      new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    return result ? { ...result, ms: Date.now() - t0 } : null;
  }

  /** The worker's /health JSON, or null when it does not answer within `timeoutMs`. */
  async health(proc: Proc, timeoutMs = 1_000): Promise<WorkerHealth | null> {
    try {
      const res = await fetch(`${proc.url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
      return (await res.json()) as WorkerHealth;
    } catch {
      return null;
    }
  }

  /**
   * The worker whose id is `leaseOwner` (runs.lease_owner): by the worker_id of /health, else by
   * the pid inside the id (`host:pid:random`, this build's format).
   */
  async workerByLeaseOwner(leaseOwner: string): Promise<Proc | undefined> {
    for (const proc of this.workers) {
      if (!isAlive(proc) || proc.stopped) continue;
      const health = await this.health(proc);
      if (health?.worker_id === leaseOwner) return proc;
    }
    return this.workers.find((proc) => leaseOwner.split(':').includes(String(proc.pid)));
  }

  /** The last `lines` lines of a process log, for failure messages. */
  logTail(proc: Proc, lines = 30): string {
    if (!existsSync(proc.logFile)) return '';
    return readFileSync(proc.logFile, 'utf8').split('\n').slice(-lines).join('\n');
  }

  /** Stops every process (waking stopped ones first); idempotent; bounded by the grace period. */
  stop(graceMs = 8_000): Promise<void> {
    this.stopping ??= (async () => {
      const all = [...this.apis, ...this.workers];
      for (const proc of all) if (proc.stopped && isAlive(proc)) proc.child.kill('SIGCONT');
      await Promise.all(all.map((proc) => this.stack.stopChild(proc.child, graceMs).catch(() => undefined)));
    })();
    return this.stopping;
  }
}

export function isAlive(proc: Proc): boolean {
  return proc.child.exitCode === null && proc.child.signalCode === null;
}

/** The echo model's answer to `text`: directives removed, whitespace collapsed. */
export function echoOf(text: string): string {
  const words = text
    .replace(/\[\[(\w+)(?::([^\]]*))?\]\]/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
  return ['Echo:', ...words].join(' ');
}

/** `count` distinct words, e.g. for a long streamed answer. */
export function words(count: number, prefix = 'w'): string {
  return Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`).join(' ');
}
