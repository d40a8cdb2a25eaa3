// The dev launcher (`npm start` = scripts/start.mjs over startStack with restarts on): a crashed
// worker is started again with back-off while the rest of the stack keeps running, and stopping
// the launcher stops every process it started (api, worker, Redis, Postgres), restarting nothing.
//
// Only pids the stack under test started are signalled; every wait is bounded.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
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
