// Fault scenarios a, b, e: a worker holding a run dies (kill -9), stalls past its lease
// (SIGSTOP … SIGCONT) or is told to stop (SIGTERM) while a second worker runs. The turn must be
// taken over and completed exactly once, the queue behind it must follow in order, and the
// durable invariants must hold afterwards.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { scrape, total } from '../support/metrics.js';
import { EventTap, isDelta, type SseEvent } from './client.js';
import {
  Cluster,
  delay,
  echoOf,
  type FaultInfra,
  isAlive,
  RECOVERY_SWEEP_MS,
  RUN_LEASE_MS,
  startFaultInfra,
  words,
  type WorkerHealth,
} from './harness.js';
import { assertSessionSettled, assistantItems, type BusyTurn, modelRequestsOfTurn, runsOfTurn, startBusyTurn } from './steps.js';

const DELAY_MS = 300;
const WORDS = 30;
const SLOW_TEXT = `${words(WORDS)} [[delay:${DELAY_MS}]]`;
/** One full model call of SLOW_TEXT ("Echo:" + the words, one delta each). */
const FULL_CALL_MS = (WORDS + 1) * DELAY_MS;
/**
 * How long a test waits for the taken-over turn to end: lease expiry + one sweep + a complete
 * re-run of the model call, with room to spare for a loaded machine. A bound on the wait, not a
 * claim about speed: what is asserted is who finished the turn and how (the takeover's time is a
 * diagnostic).
 */
const TAKEOVER_WAIT_MS = 3 * (RUN_LEASE_MS + RECOVERY_SWEEP_MS + FULL_CALL_MS);
/** Past the worker's own shutdown deadline (SHUTDOWN_TIMEOUT_MS, 25 s, then exit 1): exit code 0 says the close finished. */
const EXIT_WAIT_MS = 40_000;

const TERMINAL_EVENTS = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);

/** Waits for the turn's terminal event (any: a failure shows at once) and asserts it is completed. */
async function turnEnds(tap: EventTap, turnId: string, timeoutMs: number, what: string): Promise<void> {
  const end = await tap.waitFor((e: SseEvent) => TERMINAL_EVENTS.has(e.type) && e.data?.turn_id === turnId, timeoutMs, what);
  assert.equal(end.type, 'agent.session.turn.completed', `${what}: the turn ended ${end.type} ${JSON.stringify(end.data?.turn?.error ?? null)}`);
}

describe('faults: workers', () => {
  let infra: FaultInfra;
  before(async () => {
    infra = await startFaultInfra('workers');
  });
  after(async () => {
    await infra?.stop();
  });

  it('a. worker kill -9 mid-turn: the other worker takes the run over, the turn completes once, the queue follows', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'a-worker-kill9', { apis: 1, workers: 2 });
    let busy: BusyTurn | undefined;
    try {
      const api = cluster.api();
      const followUps = ['after the crash one', 'after the crash two'];
      busy = await startBusyTurn(infra, cluster, api, (id) => EventTap.open(api, id, { reconnect: true }), SLOW_TEXT, followUps);
      const { session, tap, turnId, runId, holder } = busy;
      // The survivor's recovery sweep takes the run over: its takeover counter shows it.
      const survivor = cluster.workers.find((proc) => proc !== holder)!;
      const takeovers = async (): Promise<number> => total(await scrape(survivor.url), 'yuxi_run_takeovers_total', { reason: 'lease_expired' });
      const takeoversBefore = await takeovers();

      cluster.signal(holder, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
      const killedAt = Date.now();

      await turnEnds(tap, turnId, TAKEOVER_WAIT_MS, 'the interrupted turn');
      t.diagnostic(`turn completed ${Date.now() - killedAt} ms after SIGKILL`);
      assert.equal((await takeovers()) - takeoversBefore, 1, 'the survivor counted one takeover of a run whose lease expired (yuxi_run_takeovers_total)');
      const turn = await api.turn(session.id, turnId);
      assert.equal(turn.status, 200);
      assert.equal(turn.body.status, 'completed');

      const runs = await runsOfTurn(infra, turnId);
      t.diagnostic(`runs: ${runs.map((r) => `${r.seq}:${r.status}${r.resume_from_run_id ? `<-${r.resume_from_run_id.slice(-6)}` : ''}`).join(' ')}`);
      assert.equal(runs.find((r) => r.id === runId)?.status, 'interrupted', 'the dead worker’s run is interrupted');
      const successor = runs.find((r) => r.resume_from_run_id === runId);
      assert.ok(successor, 'a run resumes from the interrupted one');
      assert.ok(successor.seq > runs.find((r) => r.id === runId)!.seq, 'the successor follows it');
      assert.notEqual(turn.body.yuxi.result_run_id, runId, 'the result comes from the takeover, not the dead run');

      const items = await assistantItems(infra, turnId);
      const partial = items.filter((i) => i.run_id === runId);
      assert.ok(partial.length >= 1, 'the interrupted run’s announced assistant item is kept');
      for (const item of partial) {
        assert.equal(item.status, 'incomplete', 'the interrupted run’s assistant item is incomplete');
        assert.ok(echoOf(SLOW_TEXT).startsWith(item.text ?? ''), `the kept text is a prefix of the answer: ${item.text}`);
      }

      await assertSessionSettled(infra, session.id, [echoOf(SLOW_TEXT), ...followUps.map(echoOf)], t);
    } finally {
      busy?.tap.close();
      await cluster.stop();
    }
  });

  it('b. worker SIGSTOP past the lease, then SIGCONT: the other worker finishes, the stale one is fenced', { timeout: 120_000 }, async (t) => {
    // With the model-request audit on: the stale run's request must not be recorded beside the takeover's.
    const cluster = await Cluster.start(infra, 'b-worker-sigstop', { apis: 1, workers: 2, env: { MODEL_REQUEST_AUDIT: 'on' } });
    let busy: BusyTurn | undefined;
    try {
      const api = cluster.api();
      const followUps = ['after the stall'];
      busy = await startBusyTurn(infra, cluster, api, (id) => EventTap.open(api, id, { reconnect: true }), SLOW_TEXT, followUps);
      const { session, tap, turnId, runId, holder } = busy;
      const before = await cluster.health(holder);
      t.diagnostic(`stale worker health before SIGSTOP: ${JSON.stringify(before)}`);

      cluster.signal(holder, 'SIGSTOP');
      const stoppedAt = Date.now();
      await turnEnds(tap, turnId, TAKEOVER_WAIT_MS, 'the turn whose worker is stopped');
      t.diagnostic(`turn completed ${Date.now() - stoppedAt} ms after SIGSTOP`);
      const runs = await runsOfTurn(infra, turnId);
      const successor = runs.find((r) => r.resume_from_run_id === runId);
      assert.ok(successor, 'a run resumes from the stalled one');

      assert.equal(before?.fenced_writes, 0, 'nothing was fenced on that worker before the stall');
      cluster.signal(holder, 'SIGCONT');
      // The resumed worker's stale run stops at its next write or at its next heartbeat (within
      // RUN_HEARTBEAT_MS), whichever comes first: either way it counts one fenced write (a refused
      // step or settle, or the run stopped for a lease held elsewhere) and writes nothing.
      let health: WorkerHealth | null = null;
      for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
        health = await cluster.health(holder);
        if (Number(health?.fenced_writes ?? 0) > 0) break;
        await delay(200);
      }
      t.diagnostic(
        `stale worker after SIGCONT: alive=${isAlive(holder)} fenced_writes=${String(health?.fenced_writes)} fenced_publishes=${String(health?.fenced_publishes)}`,
      );
      assert.ok(health, 'the resumed worker answers /health');
      assert.equal(typeof health.fenced_publishes, 'number', '/health reports fenced_publishes');
      assert.ok(Number(health.fenced_writes) > 0, `the stale run was fenced: fenced_writes=${String(health.fenced_writes)}`);

      // Nothing from the stale run after the takeover became visible.
      const takeover = tap.events.findIndex(
        (e) =>
          (e.type === 'yuxi.session.run.interrupted' && (e.data?.yuxi?.run_id === runId || e.data?.run?.id === runId)) ||
          (e.type === 'yuxi.session.run.created' && (e.data?.run?.resume_from_run_id === runId || e.data?.yuxi?.run_id === successor.id)),
      );
      assert.ok(takeover >= 0, 'the stream announced the takeover (run.interrupted or the successor’s run.created)');
      const late = tap.events.slice(takeover).filter((e) => isDelta(e) && e.data?.yuxi?.run_id === runId);
      assert.equal(late.length, 0, `the stale worker published ${late.length} delta(s) after the takeover: ${late.map((e) => e.data.delta).join('')}`);

      // The final state is the new run's.
      const turn = await api.turn(session.id, turnId);
      assert.equal(turn.body.status, 'completed');
      assert.ok(turn.body.yuxi.result_run_id && turn.body.yuxi.result_run_id !== runId, 'the result run is the takeover');
      const after = await runsOfTurn(infra, turnId);
      assert.equal(after.find((r) => r.id === runId)?.status, 'interrupted', 'the stale worker did not overwrite its run’s status');
      const items = await assistantItems(infra, turnId);
      const completed = items.filter((i) => i.status === 'completed');
      assert.equal(completed.length, 1);
      assert.notEqual(completed[0]!.run_id, runId, 'the completed answer was written by the new run');
      for (const item of items.filter((i) => i.run_id === runId)) assert.equal(item.status, 'incomplete');
      // One request per committed model call, each the committing run's: none from the fenced one.
      const audited = await modelRequestsOfTurn(infra, turnId);
      assert.equal(audited.steps.length, 1, 'the takeover made the one committed model call');
      assert.deepEqual(
        audited.requests.map((r) => [r.step_id, r.run_id]),
        audited.steps.map((s) => [s.id, s.run_id]),
        'each model-call step has its request, and no other request exists',
      );
      assert.ok(audited.requests.every((r) => r.run_id !== runId), 'nothing recorded by the stale run');

      await assertSessionSettled(infra, session.id, [echoOf(SLOW_TEXT), ...followUps.map(echoOf)], t);
    } finally {
      busy?.tap.close();
      await cluster.stop();
    }
  });

  it('e. worker SIGTERM mid-turn with inputs queued: it releases the run and exits 0, the other worker finishes the turn and the queue in order', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'e-worker-sigterm', { apis: 1, workers: 2 });
    let busy: BusyTurn | undefined;
    try {
      const api = cluster.api();
      const followUps = ['queued one', 'queued two', 'queued three'];
      busy = await startBusyTurn(infra, cluster, api, (id) => EventTap.open(api, id, { reconnect: true }), SLOW_TEXT, followUps);
      const { session, tap, turnId, runId, holder } = busy;

      cluster.signal(holder, 'SIGTERM');
      const exit = await cluster.waitExit(holder, EXIT_WAIT_MS);
      assert.ok(exit, `the signalled worker exits; its log ends:\n${cluster.logTail(holder)}`);
      t.diagnostic(`worker exited ${exit.ms} ms after SIGTERM (code ${exit.code}, signal ${exit.signal})`);
      assert.deepEqual([exit.code, exit.signal], [0, null], `a clean close (the shutdown deadline exits 1); its log ends:\n${cluster.logTail(holder)}`);

      await turnEnds(tap, turnId, TAKEOVER_WAIT_MS, 'the released turn');
      const turn = await api.turn(session.id, turnId);
      assert.equal(turn.body.status, 'completed');
      const runs = await runsOfTurn(infra, turnId);
      t.diagnostic(`runs: ${runs.map((r) => `${r.seq}:${r.status}`).join(' ')}`);
      // Released, not finished: the signalled worker's run ended interrupted and another run produced the result.
      assert.equal(runs.find((r) => r.id === runId)?.status, 'interrupted', 'the released run is interrupted');
      assert.ok(runs.some((r) => r.resume_from_run_id === runId), 'a run resumes from the released one');
      assert.notEqual(turn.body.yuxi.result_run_id, runId, 'the other worker produced the result');
      // The model call the shutdown cut is counted once, with the released run (its successor calls again).
      const { rows: cut } = await infra.db.query(`SELECT kind, model_calls FROM usage_ledger WHERE run_id = $1`, [runId]);
      assert.deepEqual(cut, [{ kind: 'model_call', model_calls: 1 }], 'the released run\'s cut call is in the ledger');

      await assertSessionSettled(infra, session.id, [echoOf(SLOW_TEXT), ...followUps.map(echoOf)], t);
    } finally {
      busy?.tap.close();
      await cluster.stop();
    }
  });
});
