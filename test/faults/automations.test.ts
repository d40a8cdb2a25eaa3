// Fault scenarios of automations: each scheduled time is recorded exactly once, fired or skipped
// with its reason, whatever happens to the workers holding the timers (kill -9) or to the timers
// themselves (Redis loses its data while times pass, and the sweep fires per catch_up).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { scrape, total } from '../support/metrics.js';
import { API, type Api, newKey } from './client.js';
import { Cluster, delay, type FaultInfra, type Proc, startFaultInfra, waitUntil } from './harness.js';

const AUTOMATIONS = `${API}/automations`;
/** The maintenance sweep of automations runs often, so a lost timer is found within a test's time. */
const AUTOMATION_ENV = { AUTOMATION_SWEEP_MS: '500' };

interface InvocationRow {
  scheduled_ms: number;
  status: string;
  skip_reason: string | null;
  reason: string;
  turn_status: string | null;
}

async function createAutomation(api: Api, body: Record<string, unknown>): Promise<any> {
  const target = { type: 'new_session', agent_id: 'default-chatbot', input: [{ role: 'user', content: 'tick' }] };
  const res = await api.request(AUTOMATIONS, { body: { type: 'periodic', timezone: 'UTC', target, ...body }, idempotencyKey: newKey('automation') });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function pause(api: Api, id: string): Promise<void> {
  const res = await api.request(`${AUTOMATIONS}/${id}/pause`, { method: 'POST' });
  assert.equal(res.status, 200, res.text);
}

/** Every scheduled time recorded for the automation, oldest first, with the turn its input became (read-only SQL). */
async function recorded(infra: FaultInfra, automationId: string): Promise<InvocationRow[]> {
  const { rows } = await infra.db.query(
    `SELECT (extract(epoch FROM v.scheduled_at) * 1000)::float8 AS scheduled_ms, v.status, v.skip_reason, v.reason, t.status AS turn_status
     FROM automation_invocations v LEFT JOIN inputs i ON i.id = v.input_id LEFT JOIN turns t ON t.id = i.turn_id
     WHERE v.automation_id = $1 AND v.scheduled_at IS NOT NULL ORDER BY v.scheduled_at`,
    [automationId],
  );
  return rows.map((row) => ({ ...row, scheduled_ms: Number(row.scheduled_ms) }));
}

const fired = (rows: InvocationRow[]): InvocationRow[] => rows.filter((row) => row.status === 'completed' || row.status === 'queued');

/** The times recorded after the last one fired before `downAt`: those the outage caught. */
function afterOutage(rows: InvocationRow[], downAt: number): InvocationRow[] {
  const lastBefore = rows.findLastIndex((row) => row.status !== 'skipped' && row.scheduled_ms <= downAt);
  return rows.slice(lastBefore + 1);
}

/** Each time once, on the period's grid, and every step between the first and the last present: fired or skipped, never lost. */
function assertEveryTimeOnce(rows: InvocationRow[], periodMs: number, what: string): void {
  const times = rows.map((row) => row.scheduled_ms);
  assert.equal(new Set(times).size, times.length, `${what}: no scheduled time recorded twice`);
  for (let i = 1; i < times.length; i++) {
    assert.equal(times[i]! - times[i - 1]!, periodMs, `${what}: the time after ${new Date(times[i - 1]!).toISOString()} is recorded (got ${new Date(times[i]!).toISOString()})`);
  }
  for (const row of rows) {
    assert.notEqual(row.status, 'failed', `${what}: no fire failed: ${JSON.stringify(row)}`);
    if (row.status === 'skipped') assert.ok(['missed', 'pending_delivery'].includes(row.skip_reason ?? ''), `${what}: a skipped time says why: ${JSON.stringify(row)}`);
  }
}

function describeRows(rows: InvocationRow[]): string {
  return rows.map((row) => `${new Date(row.scheduled_ms).toISOString().slice(17, 23)}:${row.status}/${row.skip_reason ?? row.reason}`).join(' ');
}

/** Automation timer jobs this worker has processed (every job's wait is observed once per job). */
async function timerJobs(proc: Proc): Promise<number> {
  return total(await scrape(proc.url), 'yuxi_queue_job_wait_seconds_count', { queue: 'automations' });
}

describe('faults: automations', () => {
  let infra: FaultInfra;
  before(async () => {
    infra = await startFaultInfra('automations');
  });
  after(async () => {
    await infra?.redis.start().catch(() => undefined);
    await infra?.stop();
  });

  it('k. two workers racing on the same times, then kill -9 of the one taking the timers: every scheduled time is recorded exactly once, the survivor keeps firing', { timeout: 60_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'k-automations-worker-kill9', { apis: 1, workers: 2, env: AUTOMATION_ENV });
    try {
      const api = cluster.api();
      // overlap queue with new sessions: every time starts a session of its own whatever the previous
      // turn is doing (a turn the killed worker held waits for its takeover; nothing queues behind it,
      // the fires are plain `scheduled` ones), so the fires counted below depend on the timers only.
      const automation = await createAutomation(api, { name: 'every second', expression: '* * * * * *', yuxi: { overlap: 'queue' } });
      await waitUntil('three fires', async () => fired(await recorded(infra, automation.id)).length >= 3, { timeoutMs: 20_000, intervalMs: 200 });

      // Both workers on the same times at once: extra timers for each of the next three times, beside
      // the real ones, taken by whichever worker fetches them. Each time must still be recorded once
      // (the losers find it taken in Postgres and write nothing).
      const queue = new Queue('automations', { connection: { url: infra.redisUrl } });
      const raced: number[] = [];
      try {
        const { rows } = await infra.db.query(`SELECT (extract(epoch FROM next_run_at) * 1000)::float8 AS ms FROM automations WHERE id = $1`, [automation.id]);
        const next = Number(rows[0].ms);
        for (const at of [next + 1_000, next + 2_000, next + 3_000]) {
          raced.push(at);
          for (let copy = 1; copy <= 4; copy++) {
            await queue.add('automation.fire', { automationId: automation.id, at }, { jobId: `${automation.id}@${at}-race${copy}`, delay: Math.max(0, at - Date.now()), removeOnComplete: true });
          }
        }
      } finally {
        await queue.close();
      }
      await waitUntil('the raced times recorded', async () => (await recorded(infra, automation.id)).filter((row) => raced.includes(row.scheduled_ms)).length === raced.length, {
        timeoutMs: 15_000,
        intervalMs: 200,
      });

      // The worker that has processed more of the timers (BullMQ hands each due job to whichever
      // worker's fetch takes it) is the one most likely to hold the next: killing it loses the
      // most (an active job, a timer it was about to arm). Its jobs counted before the kill.
      const counts = await Promise.all(cluster.workers.map((proc) => timerJobs(proc)));
      const holder = counts[0]! >= counts[1]! ? cluster.workers[0]! : cluster.workers[1]!;
      const survivor = cluster.workers.find((proc) => proc !== holder)!;
      t.diagnostic(`timer jobs per worker: ${counts.join(', ')}; killing ${holder.name}`);
      cluster.signal(holder, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
      const killedAt = Date.now();

      await waitUntil('three fires after the kill', async () => fired(await recorded(infra, automation.id)).filter((row) => row.scheduled_ms > killedAt).length >= 3, {
        timeoutMs: 25_000,
        intervalMs: 200,
      });
      await pause(api, automation.id);
      const rows = await recorded(infra, automation.id);
      t.diagnostic(describeRows(rows));
      assertEveryTimeOnce(rows, 1_000, 'every-second automation');
      for (const at of raced) assert.equal(rows.filter((row) => row.scheduled_ms === at).length, 1, `the raced time ${new Date(at).toISOString()} is recorded once`);
      assert.ok((await timerJobs(survivor)) > 0, 'the survivor took timers after the kill');
    } finally {
      await cluster.stop();
    }
  });

  it('l. Redis loses its data while times pass: the sweep fires per catch_up (latest: the most recent time; all: the most recent AUTOMATION_CATCH_UP_MAX) and records the rest as skipped, missed', { timeout: 60_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'l-automations-redis-loss', { apis: 1, workers: 1, env: { ...AUTOMATION_ENV, AUTOMATION_CATCH_UP_MAX: '2' } });
    try {
      const api = cluster.api();
      const latest = await createAutomation(api, { name: 'latest', expression: '*/2 * * * * *', yuxi: { catch_up: 'latest' } });
      // overlap queue with new sessions: each catch-up fire of `all` starts a session of its own (nothing
      // queues behind the previous turn, so the fire keeps its catch-up reason).
      const all = await createAutomation(api, { name: 'all', expression: '*/2 * * * * *', yuxi: { catch_up: 'all', overlap: 'queue' } });
      // Redis goes down right after a fire whose turn has ended (so no turn of an automation waits
      // on a nudge Redis lost when the catch-up comes).
      const settled = async (id: string): Promise<boolean> => {
        const rows = await recorded(infra, id);
        return fired(rows).length >= 2 && rows.every((row) => row.status === 'skipped' || ['completed', 'failed', 'cancelled'].includes(row.turn_status ?? ''));
      };
      await waitUntil('two fires of each, their turns ended', async () => (await settled(latest.id)) && (await settled(all.id)), { timeoutMs: 25_000, intervalMs: 100 });

      await infra.redis.kill('SIGKILL');
      const downAt = Date.now();
      // The outage itself: three scheduled times of each pass with no Redis (no timer, no sweep job).
      await delay(6_000);
      await infra.redis.start();
      t.diagnostic(`redis was down for ${Date.now() - downAt} ms, its data lost`);

      // The job schedulers come back (the worker puts them in place again), the sweep finds both due.
      const caughtUp = async (id: string): Promise<boolean> => (await recorded(infra, id)).some((row) => row.scheduled_ms > downAt && row.status !== 'skipped' && row.turn_status !== null);
      await waitUntil('both automations caught up and firing on their timers again', async () => {
        const rows = await Promise.all([latest.id, all.id].map((id) => recorded(infra, id)));
        return (await caughtUp(latest.id)) && (await caughtUp(all.id)) && rows.every((r) => r.at(-1)!.reason === 'scheduled' && r.at(-1)!.scheduled_ms > downAt);
      }, { timeoutMs: 30_000, intervalMs: 200 });
      await pause(api, latest.id);
      await pause(api, all.id);

      const latestRows = await recorded(infra, latest.id);
      const allRows = await recorded(infra, all.id);
      t.diagnostic(`latest: ${describeRows(latestRows)}`);
      t.diagnostic(`all: ${describeRows(allRows)}`);
      assertEveryTimeOnce(latestRows, 2_000, 'catch_up latest');
      assertEveryTimeOnce(allRows, 2_000, 'catch_up all');

      // latest: the times of the outage are skipped as missed, then the most recent one fires late.
      const latestOutage = afterOutage(latestRows, downAt);
      const latestCatchUp = latestOutage.findIndex((row) => row.reason === 'catch_up');
      assert.ok(latestCatchUp >= 2, `latest: at least two missed times before its catch-up fire: ${describeRows(latestOutage)}`);
      for (const row of latestOutage.slice(0, latestCatchUp)) assert.deepEqual([row.status, row.skip_reason, row.reason], ['skipped', 'missed', 'missed'], 'latest: an older missed time is skipped');
      assert.equal(latestOutage[latestCatchUp]!.status, 'completed', 'latest: the most recent missed time fires');
      assert.ok(latestOutage.slice(latestCatchUp + 1).every((row) => row.reason !== 'catch_up' && row.skip_reason !== 'missed'), 'latest: one catch-up fire, then the schedule');

      // all: the two most recent missed times fire (AUTOMATION_CATCH_UP_MAX), the older ones are skipped as missed.
      const allOutage = afterOutage(allRows, downAt);
      const firstFired = allOutage.findIndex((row) => row.status !== 'skipped');
      assert.ok(firstFired >= 1, `all: missed times beyond AUTOMATION_CATCH_UP_MAX are skipped: ${describeRows(allOutage)}`);
      for (const row of allOutage.slice(0, firstFired)) assert.deepEqual([row.status, row.skip_reason, row.reason], ['skipped', 'missed', 'missed'], 'all: an older missed time is skipped');
      const caught = allOutage.slice(firstFired, firstFired + 2);
      assert.equal(caught[0]!.reason, 'catch_up', `all: the first caught-up time fires as a catch-up: ${describeRows(allOutage)}`);
      for (const row of caught) assert.equal(row.status, 'completed', 'all: each of the most recent missed times fires');
      assert.ok(['catch_up', 'scheduled'].includes(caught[1]!.reason), `all: the second fires too, as a catch-up (or on time, when it was the latest), never as queued behind another session's turn: ${caught[1]!.reason}`);
    } finally {
      await cluster.stop();
    }
  });
});
