// Fault scenario r1: the purge of deleted sessions (retention kind deleted_sessions) is killed
// midway. A worker purging sessions with many rows, two rows a statement (RETENTION_BATCH_ROWS=2),
// is SIGKILLed once part of their rows are gone; at that point no row names a session that is gone.
// A new worker finishes the purge: every row of the deleted sessions goes, the live session keeps
// all of its own, and the invariant check (the orphan check included) holds. With two rows a
// statement every table's rows span many batches, so a parent's statement meets parents whose
// children are still there: no batch may fail on a foreign key (neither worker's log says a purge
// failed, and the second worker's failure counters stay at 0).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { scrape, total } from '../support/metrics.js';
import { API } from './client.js';
import { assertInvariants, Cluster, type FaultInfra, invariantsModule, type Proc, startFaultInfra, waitQuiescent, waitUntil } from './harness.js';

const GRACE_S = 7 * 24 * 3600;
const TURNS = 12;

/**
 * Rows left in the tables a session owns, for these sessions (sessions rows included); `kept`: the
 * same without the outbox, which a live session loses too once the clock is past the replay window
 * (the outbox prune goes by the lifecycle clock; it keeps each session's last row).
 */
async function rowsLeft(infra: FaultInfra, ids: string[]): Promise<{ sessions: number; owned: number; kept: number }> {
  const { rows } = await infra.db.query(
    `SELECT (SELECT count(*) FROM sessions WHERE id = ANY($1::uuid[]))::int AS sessions,
            ((SELECT count(*) FROM items WHERE session_id = ANY($1::uuid[])) + (SELECT count(*) FROM inputs WHERE session_id = ANY($1::uuid[]))
             + (SELECT count(*) FROM turns WHERE session_id = ANY($1::uuid[])) + (SELECT count(*) FROM runs WHERE session_id = ANY($1::uuid[]))
             + (SELECT count(*) FROM run_steps WHERE session_id = ANY($1::uuid[]))
             + (SELECT count(*) FROM idempotency_receipts WHERE session_id = ANY($1::uuid[])))::int AS kept,
            ((SELECT count(*) FROM items WHERE session_id = ANY($1::uuid[])) + (SELECT count(*) FROM inputs WHERE session_id = ANY($1::uuid[]))
             + (SELECT count(*) FROM turns WHERE session_id = ANY($1::uuid[])) + (SELECT count(*) FROM runs WHERE session_id = ANY($1::uuid[]))
             + (SELECT count(*) FROM run_steps WHERE session_id = ANY($1::uuid[])) + (SELECT count(*) FROM session_events WHERE session_id = ANY($1::uuid[]))
             + (SELECT count(*) FROM idempotency_receipts WHERE session_id = ANY($1::uuid[])))::int AS owned`,
    [ids],
  );
  return rows[0];
}

/** Lines of a worker's log saying a purge of deleted sessions failed (RetentionSweep for the task, SessionPurge for a batch or a session). */
function purgeFailures(proc: Proc): string[] {
  if (!existsSync(proc.logFile)) return [];
  return readFileSync(proc.logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('retention deleted_sessions failed') || line.includes('session purge'));
}

describe('faults: retention', () => {
  let infra: FaultInfra;
  before(async () => {
    infra = await startFaultInfra('retention');
  });
  after(async () => {
    await infra?.stop();
  });

  it('r1. a purge killed midway (kill -9): no orphan at the kill, the next worker finishes it', { timeout: 180_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'r1-purge-kill9', {
      apis: 1,
      workers: 1,
      env: { LIFECYCLE_CLOCK_ADJUSTABLE: 'true', RETENTION_SWEEP_MS: '200', RETENTION_BATCH_ROWS: '2' },
    });
    const api = cluster.api();
    const setClock = async (offsetS: number) => {
      const res = await api.request('/api/v1/admin/lifecycle-clock', { method: 'PUT', body: { offset_s: offsetS } });
      assert.equal(res.status, 200, res.text);
    };
    try {
      const doomed = [await api.createSession('first'), await api.createSession('first')].map((s) => s.id as string);
      const live = (await api.createSession('stays')).id as string;
      for (let turn = 1; turn < TURNS; turn += 1) for (const id of doomed) await api.send(id, `turn ${turn}`);
      await waitQuiescent(infra, [...doomed, live], 120_000);
      const start = await rowsLeft(infra, doomed);
      const liveBefore = await rowsLeft(infra, [live]);
      t.diagnostic(`to purge: ${start.owned} rows of ${start.sessions} sessions`);
      assert.ok(start.owned > 20 * TURNS, `many rows (${start.owned})`);
      for (const id of doomed) assert.equal((await api.request(`${API}/sessions/${id}`, { method: 'DELETE' })).status, 200);

      await setClock(GRACE_S + 3600);
      // Midway: some of the rows gone, the sessions still there. Then the worker dies at once.
      await waitUntil(
        'the purge to have started',
        async () => {
          const now = await rowsLeft(infra, doomed);
          return now.owned < start.owned - 10 && now.sessions === doomed.length;
        },
        { timeoutMs: 60_000, intervalMs: 20 },
      );
      const [victim] = cluster.workers;
      cluster.signal(victim!, 'SIGKILL');
      assert.ok(await cluster.waitExit(victim!, 5_000), 'the worker is gone');
      const atKill = await rowsLeft(infra, doomed);
      t.diagnostic(`killed with ${atKill.owned} of ${start.owned} rows left`);
      assert.ok(atKill.owned > 0 && atKill.sessions === doomed.length, `killed midway (${JSON.stringify(atKill)})`);
      const { checkInvariants } = await invariantsModule();
      const orphans = await checkInvariants(infra.databaseUrl, { only: ['session_rows_belong_to_sessions'], strict: true });
      assert.deepEqual(orphans.violations, [], 'no orphan row where the purge was killed');
      assert.equal(orphans.checked, 1);

      assert.deepEqual(purgeFailures(victim!), [], 'no purge batch of the killed worker failed');

      const next = await cluster.addWorker();
      await waitUntil('the next worker to finish the purge', async () => {
        const now = await rowsLeft(infra, doomed);
        return now.owned === 0 && now.sessions === 0;
      }, { timeoutMs: 60_000, intervalMs: 200 });
      const liveAfter = await rowsLeft(infra, [live]);
      assert.equal(liveAfter.sessions, 1, 'the live session stays');
      assert.equal(liveAfter.kept, liveBefore.kept, 'the live session keeps every row but its aged outbox');
      assert.ok(liveAfter.owned > liveAfter.kept, 'and its outbox\'s last row');
      assert.deepEqual(purgeFailures(next), [], 'no purge batch of the next worker failed');
      const metrics = await scrape(next.url);
      assert.equal(total(metrics, 'yuxi_retention_failures_total', { kind: 'deleted_sessions' }), 0, 'no failed deleted_sessions batch');
      assert.equal(total(metrics, 'yuxi_session_purge_quarantined_total'), 0, 'no session set aside');
      assert.ok(total(metrics, 'yuxi_retention_rows_removed_total', { kind: 'deleted_sessions' }) > 0, 'the next worker removed rows');
      assert.equal((await api.request(`${API}/sessions/${doomed[0]}`, { method: 'DELETE' })).status, 404, 'a purged session is not found');
      await assertInvariants(infra, [...doomed, live], (m) => t.diagnostic(m));
    } finally {
      await setClock(0).catch(() => undefined);
      await cluster.stop();
    }
  });
});
