import { setTimeout as sleep } from 'node:timers/promises';
import { query } from './db.js';
import { env } from './env.js';

/** The process id of the suite's worker, as its own health port reports it. */
async function workerPid(): Promise<number> {
  const res = await fetch(`${env.workerHealthUrl}/health/live`);
  const body = (await res.json()) as { info?: { process?: { pid?: number } } };
  const pid = body.info?.process?.pid;
  if (res.status !== 200 || typeof pid !== 'number') throw new Error(`the worker's health port named no pid: ${res.status} ${JSON.stringify(body)}`);
  return pid;
}

/** Transactions open on the suite's database, this query's own aside. */
async function openTransactions(): Promise<number> {
  const rows = await query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND xact_start IS NOT NULL`,
  );
  return rows[0]?.n ?? 0;
}

/**
 * Stops the worker where it holds no transaction: stopped inside one, it would hold its locks (a
 * session's, say) and every request needing them would wait for it. The api's transactions end
 * on their own within moments; one still open while the worker is stopped is the worker's, so
 * the worker goes on and is stopped again. Bounded in attempts.
 */
async function stopOutsideTransactions(pid: number): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    process.kill(pid, 'SIGSTOP');
    // Two quiet readings 50 ms apart: a statement the worker sent just before it stopped (a BEGIN
    // still in the socket) is seen by the second one.
    for (let check = 0; check < 10; check += 1) {
      if ((await openTransactions()) === 0) {
        await sleep(50);
        if ((await openTransactions()) === 0) return;
      }
      await sleep(20);
    }
    process.kill(pid, 'SIGCONT');
    await sleep(50);
  }
  throw new Error('the worker could not be stopped outside a transaction in 50 attempts');
}

/**
 * Runs `body` with the suite's worker process stopped (SIGSTOP), then lets it go on (SIGCONT),
 * whatever `body` did: a run that cannot take its next step, as on a stalled worker, while
 * requests still reach the api. Keep `body` short (well inside the run lease, RUN_LEASE_MS,
 * 30 s in the suite): the worker is frozen, not dead, and resumes where it was. The worker is let
 * go on whatever happens here: a failed stop, a failed body, or this test process exiting.
 */
export async function withWorkerStopped<T>(body: () => Promise<T>): Promise<T> {
  const pid = await workerPid();
  const resume = (): void => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // Gone already: nothing to resume.
    }
  };
  process.once('exit', resume);
  try {
    await stopOutsideTransactions(pid);
    return await body();
  } finally {
    resume();
    process.removeListener('exit', resume);
  }
}
