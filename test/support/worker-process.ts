import { env } from './env.js';

/** The process id of the suite's worker, as its own health port reports it. */
async function workerPid(): Promise<number> {
  const res = await fetch(`${env.workerHealthUrl}/health/live`);
  const body = (await res.json()) as { info?: { process?: { pid?: number } } };
  const pid = body.info?.process?.pid;
  if (res.status !== 200 || typeof pid !== 'number') throw new Error(`the worker's health port named no pid: ${res.status} ${JSON.stringify(body)}`);
  return pid;
}

/**
 * Runs `body` with the suite's worker process stopped (SIGSTOP), then lets it go on (SIGCONT),
 * whatever `body` did: a run that cannot take its next step, as on a stalled worker, while
 * requests still reach the api. Keep `body` short (well inside the run lease, RUN_LEASE_MS,
 * 30 s in the suite): the worker is frozen, not dead, and resumes where it was.
 */
export async function withWorkerStopped<T>(body: () => Promise<T>): Promise<T> {
  const pid = await workerPid();
  process.kill(pid, 'SIGSTOP');
  try {
    return await body();
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}
