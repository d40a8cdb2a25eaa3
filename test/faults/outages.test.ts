// Fault scenarios c, d: the dependencies fail under a running turn. Redis is killed (-9, its
// in-memory data lost) and restarted; Postgres is stopped (fast shutdown) and started again on
// the same data dir. Submissions keep being accepted while Redis is down, reads say 503
// service_unavailable (retryable) while a dependency is down, and afterwards every accepted input
// runs exactly once and every subscriber sees every durable event or a resync.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { API, type Api, EventTap, isDelta, newKey } from './client.js';
import { assertInvariants, Cluster, delay, echoOf, type FaultInfra, processTree, RUN_LEASE_MS, startFaultInfra, waitQuiescent, waitUntil, words } from './harness.js';
import { assertEveryDurableEventOrResync, assertSessionSettled, assertTurnsInOrder, inputsInOrder } from './steps.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** How long Redis (c) and Postgres (d) stay down: past a heartbeat (1 s), short of the lease. */
const OUTAGE_MS = Math.min(2_000, RUN_LEASE_MS - 500);

/** The turn caught by an outage completes after it, alone in its session, with every invariant held. */
async function expectCompletedAfterOutage(
  infra: FaultInfra,
  api: Api,
  sessionId: string,
  turnId: string,
  text: string,
  after: string,
  t: { diagnostic: (message: string) => void },
): Promise<void> {
  const final = await waitUntil(
    `the turn to end after ${after}`,
    async () => {
      const res = await api.turn(sessionId, turnId);
      return res.status === 200 && TERMINAL.has(res.body.status) ? res.body : null;
    },
    { timeoutMs: 45_000, intervalMs: 250 },
  );
  assert.equal(final.status, 'completed', `the turn completed: ${JSON.stringify(final.error ?? null)}`);
  await assertSessionSettled(infra, sessionId, [echoOf(text)], t);
}

/** Signals a process of the harness's Postgres tree; one that exited meanwhile is no error. */
function tryKill(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

function assertServiceUnavailable(res: { status: number; text: string; body: any }, what: string): void {
  assert.equal(res.status, 503, `${what}: 503, got ${res.status} ${res.text}`);
  assert.equal(res.body?.error?.code, 'service_unavailable', `${what}: error code`);
  assert.equal(res.body?.error?.retryable, true, `${what}: retryable`);
}

describe('faults: outages', () => {
  let infra: FaultInfra;
  before(async () => {
    infra = await startFaultInfra('outages');
  });
  after(async () => {
    // A failed scenario may leave a server down; stop() copes, but bring them back for a clean stop.
    await infra?.redis.start().catch(() => undefined);
    await infra?.postgres.start().catch(() => undefined);
    await infra?.stop();
  });

  it('c. Redis kill -9 and restart mid-turn: submits are accepted (202) while Redis is still down, every input runs once, subscribers see every durable event or a resync', { timeout: 150_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'c-redis-kill9', { apis: 1, workers: 1 });
    const taps: EventTap[] = [];
    try {
      const api = cluster.api();
      const session = await api.createSession();
      const live = await EventTap.open(api, session.id, { reconnect: true, idleMs: 4_000 });
      taps.push(live);
      const texts = [`${words(20)} [[delay:200]]`];
      await api.send(session.id, texts[0]!);
      await live.waitFor(isDelta, 20_000, 'first output_text.delta');

      await infra.redis.kill('SIGKILL');
      const downAt = Date.now();
      try {
        for (const n of [1, 2, 3]) {
          const text = `submitted while redis is down ${n}`;
          const res = await api.sendMessage(session.id, text, newKey('outage'), 5_000);
          t.diagnostic(`submit #${n} during the outage: ${res.status} in ${Math.round(res.ms)} ms`);
          // Redis stays down until after these answers: a submit that waited on Redis would get no
          // answer at all (the request's own 5 s bound). How long a submit takes is the bench's.
          assert.equal(res.status, 202, `a submit during the Redis outage is accepted: ${res.text}`);
          texts.push(text);
        }
        // Redis stays down for OUTAGE_MS, so the streaming worker's deltas and durable events meet
        // the outage; every subscription attempt during it must say 503 service_unavailable.
        const probes: string[] = [];
        for (let n = 1; n === 1 || Date.now() - downAt < OUTAGE_MS; n++) {
          const probe = await api.probeStream(session.id, 5_000);
          probes.push(`${probe.status}/${Math.round(probe.ms)}ms`);
          assertServiceUnavailable(probe, `GET …/events #${n} while Redis is down`);
          if (n >= 100) break;
          await delay(200);
        }
        t.diagnostic(`GET …/events during the outage: ${probes.join(' ')}`);
      } finally {
        await infra.redis.start();
      }
      t.diagnostic(`redis was down for ${Date.now() - downAt} ms`);

      const fresh = await EventTap.open(api, session.id, { reconnect: true });
      taps.push(fresh);
      const lastText = 'submitted after redis came back';
      await api.send(session.id, lastText);
      texts.push(lastText);

      await waitQuiescent(infra, [session.id], 60_000);
      const inputs = await inputsInOrder(infra, session.id);
      t.diagnostic(`turns: ${inputs.map((i) => i.turn_status).join(', ')}`);
      await assertTurnsInOrder(infra, session.id, texts.map(echoOf));

      // Every outbox row reaches the stream (the relay), then each subscriber has all or a resync.
      await assertEveryDurableEventOrResync(infra, session.id, 'live subscriber', live, t);
      await assertEveryDurableEventOrResync(infra, session.id, 'fresh subscriber', fresh, t);
      await assertInvariants(infra, [session.id], (m) => t.diagnostic(m));
    } finally {
      for (const tap of taps) tap.close();
      await cluster.stop();
    }
  });

  it('c2. Redis loses its data between turns (kill -9, immediate restart): a fresh subscriber sees every durable event or a resync', { timeout: 90_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'c2-redis-data-loss', { apis: 1, workers: 1 });
    let fresh: EventTap | undefined;
    try {
      const api = cluster.api();
      const session = await api.createSession();
      await api.send(session.id, 'before the data loss');
      await waitQuiescent(infra, [session.id], 20_000);
      await infra.redis.kill('SIGKILL');
      await infra.redis.start();
      await api.send(session.id, 'after the data loss');
      await waitQuiescent(infra, [session.id], 30_000);
      await assertTurnsInOrder(infra, session.id, [echoOf('before the data loss'), echoOf('after the data loss')]);

      fresh = await EventTap.open(api, session.id, { reconnect: true });
      await assertEveryDurableEventOrResync(infra, session.id, 'fresh subscriber', fresh, t);
      await assertInvariants(infra, [session.id], (m) => t.diagnostic(m));
    } finally {
      fresh?.close();
      await cluster.stop();
    }
  });

  it('d. Postgres restart mid-turn: reads answer 503 service_unavailable (retryable), the turn completes after', { timeout: 150_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'd-postgres-restart', { apis: 1, workers: 1 });
    let tap: EventTap | undefined;
    try {
      const api = cluster.api();
      const session = await api.createSession();
      tap = await EventTap.open(api, session.id, { reconnect: true });
      const text = `${words(20)} [[delay:200]]`;
      await api.send(session.id, text);
      const delta = await tap.waitFor(isDelta, 20_000, 'first output_text.delta');
      const turnId = delta.data.turn_id as string;

      await infra.postgres.halt('SIGINT');
      const downAt = Date.now();
      try {
        // The outage lasts OUTAGE_MS (> one heartbeat, < one lease), so the worker's renewals and
        // writes meet it; every read during it must say 503 service_unavailable, never 500.
        const reads: string[] = [];
        for (let n = 1; n === 1 || Date.now() - downAt < OUTAGE_MS; n++) {
          const read = await api.request(`${API}/sessions/${session.id}`, { timeoutMs: 10_000 });
          reads.push(`${read.status}/${Math.round(read.ms)}ms`);
          assertServiceUnavailable(read, `GET …/sessions/{id} #${n} while Postgres is down`);
          if (n >= 100) break;
          await delay(200);
        }
        t.diagnostic(`GET session during the outage: ${reads.join(' ')}`);
      } finally {
        await infra.postgres.start();
      }
      t.diagnostic(`postgres was down for ${Date.now() - downAt} ms`);

      await expectCompletedAfterOutage(infra, api, session.id, turnId, text, 'the Postgres restart', t);
    } finally {
      tap?.close();
      await cluster.stop();
    }
  });

  it('d2. frozen Postgres (SIGSTOP) mid-turn: a read answers 503 service_unavailable (its query times out instead of hanging), the turn completes after SIGCONT', { timeout: 150_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'd2-postgres-frozen', { apis: 1, workers: 1 });
    let tap: EventTap | undefined;
    let frozen: number[] = [];
    try {
      const api = cluster.api();
      const session = await api.createSession();
      tap = await EventTap.open(api, session.id, { reconnect: true });
      const text = `${words(20)} [[delay:200]]`;
      await api.send(session.id, text);
      const delta = await tap.waitFor(isDelta, 20_000, 'first output_text.delta');
      const turnId = delta.data.turn_id as string;

      // The postmaster this harness started and the backends it forked: a database that accepts
      // connections and never answers.
      const pid = infra.postgres.pid;
      assert.ok(pid, 'the harness knows the Postgres pid');
      // The postmaster first (a stopped postmaster forks no new backend), then its backends.
      frozen = [pid];
      tryKill(pid, 'SIGSTOP');
      frozen = processTree(pid);
      for (const p of frozen) tryKill(p, 'SIGSTOP');
      try {
        const read = await api.request(`${API}/sessions/${session.id}`, { timeoutMs: 15_000 });
        t.diagnostic(`GET session while Postgres is frozen: ${read.status} in ${Math.round(read.ms)} ms`);
        assertServiceUnavailable(read, 'GET …/sessions/{id} while Postgres is frozen');
      } finally {
        for (const p of frozen) tryKill(p, 'SIGCONT');
        frozen = [];
      }

      await expectCompletedAfterOutage(infra, api, session.id, turnId, text, 'Postgres thawed', t);
    } finally {
      for (const p of frozen) tryKill(p, 'SIGCONT');
      tap?.close();
      await cluster.stop();
    }
  });
});
