// A fault scenario of context compaction: the worker summarising a session's history (a manual
// compaction turn) dies (kill -9) while the summariser call is in flight. The summary is not a side
// effect: nothing was committed, so the worker that takes the turn over compacts again, and the
// session ends with exactly one compaction item, written by the takeover's committed step.
//
// The summariser is a fake OpenAI-compatible server in this test process on 127.0.0.1 (it holds
// the first call open until the kill).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, newKey } from './client.js';
import { assertInvariants, Cluster, type FaultInfra, RECOVERY_SWEEP_MS, RUN_LEASE_MS, startFaultInfra, waitQuiescent, waitUntil } from './harness.js';
import { runsOfTurn } from './steps.js';

const TAKEOVER_BUDGET_MS = RUN_LEASE_MS + RECOVERY_SWEEP_MS + 15_000;

describe('faults: compaction', () => {
  let infra: FaultInfra;
  let fake: FakeOpenAi;
  before(async () => {
    fake = await startFakeOpenAi(0);
    infra = await startFaultInfra('compaction');
  });
  after(async () => {
    await fake?.close();
    await infra?.stop();
  });

  it('j. kill -9 during a compaction: the takeover compacts again and exactly one compaction item is committed', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'j-compaction-kill9', { apis: 1, workers: 2, env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake' } });
    try {
      const api = cluster.api();
      const agentId = `fault-${randomUUID().slice(0, 8)}`;
      const summariser = `summary-${randomUUID()}`;
      const put = await api.request(`/api/v1/admin/agents/${agentId}`, {
        method: 'PUT',
        body: { name: agentId, model: 'scripted:echo', context: { compaction: { mode: 'manual', model: `openai:${summariser}` } } },
      });
      assert.equal(put.status, 201, `PUT agent: ${put.text}`);
      // The first summary call never answers (its worker is killed); the takeover's does.
      fake.script(summariser, [{ hang: true }, { text: 'Facts:\n- ticket T-777' }]);

      const created = await api.request(`${API}/sessions`, { body: { agent_id: agentId, input: 'The ticket id is T-777.' }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const session = created.body;
      await waitUntil('the first turn to complete', async () => ((await api.turns(session.id))[0]?.status === 'completed' ? true : undefined));
      const compact = await api.request(`${API}/sessions/${session.id}/events`, { body: { events: [{ type: 'yuxi.session.input.compact' }] }, idempotencyKey: newKey('compact') });
      assert.equal(compact.status, 202, compact.text);

      await waitUntil('the summariser to receive the first call', () => (fake.requests(summariser).length === 1 ? true : undefined), { timeoutMs: 20_000, intervalMs: 50 });
      const turnId = (await api.turns(session.id)).find((turn) => turn.status === 'in_progress')?.id as string;
      assert.ok(turnId, 'the compaction turn is in progress');
      const running = (await runsOfTurn(infra, turnId)).filter((r) => r.status === 'in_progress' && r.lease_owner);
      assert.equal(running.length, 1, `one leased run holds the compaction turn: ${JSON.stringify(running)}`);
      const holder = await cluster.workerByLeaseOwner(running[0]!.lease_owner!);
      assert.ok(holder, 'a worker of this cluster holds the run');
      cluster.signal(holder, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
      const { rows: before } = await infra.db.query(`SELECT count(*)::int AS n FROM items WHERE session_id = $1 AND type = 'compaction'`, [session.id]);
      assert.equal(before[0].n, 0, 'nothing was committed by the killed worker');

      const ended = await waitUntil(
        'the compaction turn to end',
        async () => {
          const res = await api.turn(session.id, turnId);
          return res.status === 200 && ['completed', 'failed', 'cancelled'].includes(res.body.status) ? res.body : undefined;
        },
        { timeoutMs: TAKEOVER_BUDGET_MS, intervalMs: 200 },
      );
      assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
      assert.deepEqual(
        (ended.yuxi.runs as any[]).map((r) => r.status),
        ['interrupted', 'completed'],
        'the killed run is interrupted, the takeover completed the compaction',
      );
      assert.equal(fake.requests(summariser).length, 2, 'the summary was asked again by the takeover');

      const items = await api.request(`${API}/sessions/${session.id}/items?order=asc&limit=100`);
      const compactions = (items.body.data as any[]).filter((item) => item.type === 'compaction');
      assert.equal(compactions.length, 1, `exactly one compaction item: ${JSON.stringify(compactions)}`);
      assert.equal(compactions[0].summary, 'Facts:\n- ticket T-777');
      assert.equal(compactions[0].yuxi.run_id, ended.yuxi.runs[1].id, 'written by the takeover');
      const { rows: steps } = await infra.db.query(`SELECT run_id FROM run_steps WHERE turn_id = $1 AND kind = 'compaction'`, [turnId]);
      assert.deepEqual(steps, [{ run_id: ended.yuxi.runs[1].id }], 'one committed compaction step');

      await waitQuiescent(infra, [session.id]);
      await assertInvariants(infra, [session.id], (m) => t.diagnostic(m));
    } finally {
      await cluster.stop();
    }
  });
});
