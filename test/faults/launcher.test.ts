// The dev launcher (`npm start` = scripts/start.mjs over startStack with restarts on): a crashed
// worker is started again with back-off while the rest of the stack keeps running, and stopping
// the launcher stops every process it started (api, worker, Redis, Postgres), restarting nothing:
// on SIGTERM to npm as on Ctrl-C, and when the stack's own process is killed outright (SIGKILL),
// its orphan guard stops the rest. A process that ignores SIGTERM is killed after its grace period
// and the stack says so.
//
// Only pids the stack under test started are signalled; every wait is bounded.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, it } from 'node:test';
import { Api } from './client.js';
import { type AppChild, FAULT_LOG_ROOT, invariantsModule, ROOT, waitUntil } from './harness.js';

interface Stack {
  url: string;
  children: AppChild[];
  child(name: string): AppChild | undefined;
  infra: { databaseUrl: string; redis: { pid: number | null } | null; postgres: { pid: number | null } | null };
  stop(): Promise<void>;
}

interface StackModule {
  startStack(options: {
    dataDir: string;
    ephemeral?: boolean;
    env?: Record<string, string>;
    logDir?: string | null;
    log?: (line: string) => void;
    restart?: boolean | { initialMs?: number; maxMs?: number; resetAfterMs?: number };
  }): Promise<Stack>;
  RESTART_POLICY: { initialMs: number; maxMs: number; resetAfterMs: number };
  launch(name: string, script: string, env: NodeJS.ProcessEnv, logDir: string | null): AppChild;
  stopChild(child: AppChild, graceMs?: number, log?: (line: string) => void): Promise<void>;
  processStartTime(pid: number): string | null;
}

interface InfraModule {
  freePort(): Promise<number>;
}

const load = async <T>(relative: string): Promise<T> => (await import(pathToFileURL(path.join(ROOT, relative)).href)) as T;

/** Alive: signal 0 reaches it and /proc does not show a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return !existsSync('/proc/self/stat');
  }
}

async function workerHealth(port: number): Promise<{ status?: string; worker_id?: string } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1_000) });
    return res.ok ? ((await res.json()) as { status?: string; worker_id?: string }) : null;
  } catch {
    return null;
  }
}

describe('faults: the dev launcher', () => {
  let stack: Stack | null = null;
  // A test process killed by the runner must not leave the stack's processes behind.
  const killAll = (): void => {
    for (const child of stack?.children ?? []) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killAll);
  after(async () => {
    await stack?.stop();
    process.removeListener('exit', killAll);
  });

  it('restarts a killed worker with back-off, keeps the api running, and stops everything on stop', { timeout: 180_000 }, async (t) => {
    const { startStack, RESTART_POLICY } = await load<StackModule>('scripts/lib/stack.mjs');
    const { freePort } = await load<InfraModule>('scripts/lib/infra.mjs');
    const logDir = path.join(FAULT_LOG_ROOT, 'launcher');
    rmSync(logDir, { recursive: true, force: true });
    const apiKey = `yx_fault_${randomBytes(24).toString('base64url')}`;
    const healthPort = await freePort();
    const said: string[] = [];
    stack = await startStack({
      dataDir: path.join(os.tmpdir(), `yuxi-faults-${process.pid}-launcher`),
      ephemeral: true,
      logDir,
      log: (line) => said.push(line),
      env: { BOOTSTRAP_API_KEY: apiKey, WORKER_HEALTH_PORT: String(healthPort), LOG_FORMAT: 'json' },
      restart: true,
    });
    const api = new Api(stack.url, apiKey);
    const apiPid = stack.child('api')!.pid!;
    const first = stack.child('worker')!;
    const firstPid = first.pid!;
    // The launcher is ready once the api is; the worker answers when its own start is done.
    await waitUntil('the first worker to answer its health port', async () => ((await workerHealth(healthPort))?.worker_id?.includes(String(firstPid)) ? true : null), {
      timeoutMs: 30_000,
      intervalMs: 100,
    });

    // A crash: the worker is restarted after the first back-off step, the api is left alone.
    first.kill('SIGKILL');
    const second = await waitUntil('a new worker process', () => {
      const current = stack!.child('worker');
      return current && current.pid !== firstPid ? current : null;
    }, { timeoutMs: 15_000, intervalMs: 50 });
    const secondPid = second.pid!;
    const health = await waitUntil('the new worker to answer its health port', async () => {
      const body = await workerHealth(healthPort);
      return body?.worker_id?.includes(String(secondPid)) ? body : null;
    }, { timeoutMs: 60_000, intervalMs: 200 });
    assert.equal(health.status, 'ok');
    assert.ok(!alive(firstPid), 'the killed worker is gone');
    assert.equal(stack.child('api')!.pid, apiPid, 'the api kept running');
    assert.ok(
      said.some((line) => line.includes(`worker (pid ${firstPid}) exited (code null, signal SIGKILL); restarting it in ${RESTART_POLICY.initialMs} ms (restart 1)`)),
      `the launcher said so: ${said.join(' | ')}`,
    );
    assert.ok(said.some((line) => line.includes(`worker restarted (pid ${secondPid})`)));

    // The new worker does the work: a turn completes.
    const session = await api.createSession();
    await api.send(session.id, 'after the restart');
    const turn = await waitUntil('the turn to complete on the restarted worker', async () => {
      const done = (await api.turns(session.id))[0];
      return done && ['completed', 'failed', 'cancelled'].includes(done.status) ? done : null;
    }, { timeoutMs: 30_000, intervalMs: 200 });
    assert.equal(turn.status, 'completed');

    // A second crash soon after: the back-off doubled.
    second.kill('SIGKILL');
    const third = await waitUntil('a third worker process', () => {
      const current = stack!.child('worker');
      return current && current.pid !== secondPid ? current : null;
    }, { timeoutMs: 15_000, intervalMs: 50 });
    assert.ok(said.some((line) => line.includes(`worker (pid ${secondPid}) exited`) && line.includes(`restarting it in ${(RESTART_POLICY.initialMs * 2) / 1000} s (restart 2)`)), said.join(' | '));
    await waitUntil('the third worker to answer its health port', async () => (await workerHealth(healthPort))?.worker_id?.includes(String(third.pid)) ?? null, {
      timeoutMs: 60_000,
      intervalMs: 200,
    });

    // The durable state the restarts left behind is consistent.
    const { checkInvariants, formatInvariantReport } = await invariantsModule();
    const invariants = await checkInvariants(stack.infra.databaseUrl, { sessionIds: [session.id], strict: process.env.INVARIANTS_LENIENT !== '1' });
    assert.deepEqual(invariants.violations, [], formatInvariantReport(invariants).join('\n'));

    // Stopping the launcher stops every process it started, and restarts none of them.
    const pids = { api: apiPid, worker: third.pid!, redis: stack.infra.redis?.pid ?? null, postgres: stack.infra.postgres?.pid ?? null };
    t.diagnostic(`processes before stop: ${JSON.stringify(pids)}`);
    assert.ok(pids.redis !== null && pids.postgres !== null, 'the stack started its own Redis and Postgres');
    const restartsBefore = said.filter((line) => line.includes('restarted')).length;
    await stack.stop();
    for (const [name, pid] of Object.entries(pids)) assert.ok(!alive(pid!), `${name} (pid ${pid}) is gone`);
    assert.ok(
      stack.children.every((child) => child.exitCode !== null || child.signalCode !== null),
      'every child of the stack exited',
    );
    assert.equal(said.filter((line) => line.includes('restarted')).length, restartsBefore, 'nothing was restarted during the stop');
    assert.ok(!said.some((line) => line.includes(`(pid ${third.pid}) exited`)), 'a stopped child is not reported as a crash');
  });
});

/** The pids the ready banner of a dev stack lists (`Pids     api 12, worker 13, redis 10, postgres 11`). */
function bannerPids(output: string): Record<string, number> | null {
  const line = /^\s*Pids\s+(.+)$/m.exec(output)?.[1];
  if (!line) return null;
  return Object.fromEntries(line.split(', ').map((entry) => {
    const [name, pid] = entry.trim().split(' ');
    return [name!, Number(pid)];
  }));
}

/** Spawns a launcher in a process group of its own (so that the test can end whatever is left), collecting its output. */
function startLauncher(command: string, args: string[], env: NodeJS.ProcessEnv, ipc = false): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(command, args, { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe', ...(ipc ? (['ipc'] as const) : [])] });
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

describe('faults: how the dev stack stops', () => {
  // Whatever a failed test leaves running is killed by pid (only pids these tests started).
  const started = new Set<number>();
  const killLeftovers = (): void => {
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  };
  process.on('exit', killLeftovers);
  after(() => {
    killLeftovers();
    process.removeListener('exit', killLeftovers);
  });

  /** Polls (a bounded number of times) until none of the pids is alive; names the ones still running. */
  async function allGone(pids: Record<string, number>, what: string): Promise<void> {
    for (let poll = 0; poll < 300; poll++) {
      if (Object.values(pids).every((pid) => !alive(pid))) return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const left = Object.entries(pids).filter(([, pid]) => alive(pid));
    assert.deepEqual(left, [], `${what}: still running`);
  }

  it('npm start stops api, worker, Redis and Postgres when npm gets SIGTERM (npm\'s shell never passes it on)', { timeout: 300_000 }, async (t) => {
    const { freePort } = await load<InfraModule>('scripts/lib/infra.mjs');
    const dataDir = path.join(os.tmpdir(), `yuxi-faults-${process.pid}-npm-start`);
    rmSync(dataDir, { recursive: true, force: true });
    const env = { ...process.env, PORT: String(await freePort()), LOG_FORMAT: 'json', BOOTSTRAP_API_KEY: `yx_fault_${randomBytes(24).toString('base64url')}` };
    const npm = startLauncher('npm', ['start', '--', '--data-dir', dataDir], env);
    started.add(npm.child.pid!);
    try {
      const pids = await waitUntil('the ready banner of npm start', () => bannerPids(npm.output()), { timeoutMs: 240_000, intervalMs: 250 });
      for (const pid of Object.values(pids)) started.add(pid);
      t.diagnostic(`processes: ${JSON.stringify(pids)}`);
      assert.deepEqual(Object.keys(pids).sort(), ['api', 'postgres', 'redis', 'worker']);
      assert.match(npm.output(), /Postgres +postgres:\/\/\S+@127\.0\.0\.1:\d+\/yuxi/, 'the banner names the Postgres URL');
      assert.match(npm.output(), /Redis +redis:\/\/127\.0\.0\.1:\d+/, 'the banner names the Redis URL');

      process.kill(npm.child.pid!, 'SIGTERM');
      await allGone(pids, 'after SIGTERM to npm');
      await waitUntil('the launcher to say the stack stopped', () => npm.output().includes('[stack] stopped'), { timeoutMs: 30_000, intervalMs: 200 });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a dev stack killed outright (SIGKILL) leaves nothing running: its orphan guard stops api, worker, Redis and Postgres', { timeout: 240_000 }, async () => {
    const { freePort } = await load<InfraModule>('scripts/lib/infra.mjs');
    const dataDir = path.join(os.tmpdir(), `yuxi-faults-${process.pid}-killed-stack`);
    rmSync(dataDir, { recursive: true, force: true });
    const env = { ...process.env, PORT: String(await freePort()), LOG_FORMAT: 'json', BOOTSTRAP_API_KEY: `yx_fault_${randomBytes(24).toString('base64url')}` };
    // As scripts/start.mjs runs it: an IPC channel to the launcher.
    const stack = startLauncher(process.execPath, [path.join(ROOT, 'scripts', 'lib', 'dev-stack.mjs'), '--data-dir', dataDir], env, true);
    started.add(stack.child.pid!);
    try {
      const pids = await waitUntil('the ready banner of the dev stack', () => bannerPids(stack.output()), { timeoutMs: 180_000, intervalMs: 250 });
      for (const pid of Object.values(pids)) started.add(pid);
      assert.deepEqual(Object.keys(pids).sort(), ['api', 'postgres', 'redis', 'worker']);

      process.kill(stack.child.pid!, 'SIGKILL');
      await allGone({ ...pids, stack: stack.child.pid! }, 'after SIGKILL of the stack');
      assert.match(stack.output(), /the stack's process is gone: stopping api \(pid \d+\), worker \(pid \d+\), redis \(pid \d+\), postgres \(pid \d+\)/, stack.output().slice(-2000));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('kills a process that does not stop within its grace period, and says so', { timeout: 60_000 }, async () => {
    const { launch, stopChild } = await load<StackModule>('scripts/lib/stack.mjs');
    const fixture = path.join(os.tmpdir(), `yuxi-faults-${process.pid}-ignores-sigterm.mjs`);
    // A process that cannot run a useful SIGTERM handler (as a worker whose event loop is stuck).
    writeFileSync(fixture, "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('handler installed');\n");
    const logDir = path.join(FAULT_LOG_ROOT, 'launcher-stuck');
    rmSync(logDir, { recursive: true, force: true });
    mkdirSync(logDir, { recursive: true });
    const child = launch('stuck', fixture, process.env, logDir);
    started.add(child.pid!);
    await waitUntil('the fixture to install its handler', () => readFileSync(path.join(logDir, 'stuck.log'), 'utf8').includes('handler installed'), { timeoutMs: 20_000 });
    const said: string[] = [];
    await stopChild(child, 1_000, (line) => said.push(line));
    assert.equal((await child.exited).signal, 'SIGKILL');
    assert.deepEqual(said, [`[stack] stuck (pid ${child.pid}) did not stop within 1 s of SIGTERM: killed it (SIGKILL)`]);
    rmSync(fixture, { force: true });
  });

  it('the orphan guard signals a recorded pid only while the process under it is the one recorded (a pid freed in a restart back-off may be reused)', { timeout: 60_000 }, async () => {
    const { processStartTime } = await load<StackModule>('scripts/lib/stack.mjs');
    // Another process that happens to hold a pid the guard was told about.
    const bystander = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    started.add(bystander.pid!);
    const bystanderExit = new Promise<NodeJS.Signals | null>((resolve) => bystander.once('exit', (_code, signal) => resolve(signal)));
    const start = processStartTime(bystander.pid!);
    assert.ok(start, 'this system has /proc/<pid>/stat');

    /** A guard told `pids`/`starts`, whose stack then ends without `done`; resolves with what it said when it exits. */
    const guardOnce = (starts: Record<string, string>): Promise<string> => {
      const guard = spawn(process.execPath, [path.join(ROOT, 'scripts', 'lib', 'orphan-guard.mjs')], { stdio: ['pipe', 'ignore', 'pipe'] });
      started.add(guard.pid!);
      let said = '';
      guard.stderr!.on('data', (chunk: Buffer) => (said += chunk.toString()));
      guard.stdin!.end(`${JSON.stringify({ pids: { worker: bystander.pid }, starts })}\n`);
      return new Promise((resolve) => guard.once('exit', () => resolve(said)));
    };

    // Recorded with another start time: the worker it named exited and the pid went to the bystander.
    const stale = await guardOnce({ worker: String(Number(start) + 1) });
    assert.equal(stale, '', 'nothing to stop');
    assert.ok(alive(bystander.pid!), 'the process now under the pid was left alone');

    // Recorded with its own start time: the process is the one named, and is stopped.
    const same = await guardOnce({ worker: start! });
    assert.match(same, new RegExp(`stopping worker \\(pid ${bystander.pid}\\)`));
    assert.equal(await bystanderExit, 'SIGTERM');
  });
});
