// Fault scenarios of cooperation trees (README "Cooperation: subagents and trees"):
//
// k. The worker holding a coordinator's run is killed (kill -9) right after its create_subagent
//    steps committed (its next model call hangs on the fake server). The takeover plans from the
//    committed steps: exactly the two members exist, none twice, each call has one result.
//    The members (one of them possibly on the killed worker too) settle, and the coordinator's
//    wait resolves with both answers.
//
// The coordinator's model is a fake OpenAI-compatible server in this test process on 127.0.0.1;
// the members run on the scripted model.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { type Api, API, newKey } from './client.js';
import { assertInvariants, Cluster, type FaultInfra, type Proc, RECOVERY_SWEEP_MS, RUN_LEASE_MS, startFaultInfra, waitQuiescent, waitUntil } from './harness.js';

const TAKEOVER_BUDGET_MS = RUN_LEASE_MS + RECOVERY_SWEEP_MS + 20_000;

/** SIGKILL of one worker this cluster started, and a fresh one in its place. */
async function replaceWorker(cluster: Cluster, holder: Proc): Promise<void> {
  cluster.signal(holder, 'SIGKILL');
  assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
  await cluster.addWorker();
}

/** A member agent on `memberModel` and a coordinator on `coordinatorModel` that may create members of it only. */
async function putTree(api: Api, memberModel: string, coordinatorModel: string, cap?: number): Promise<{ memberAgent: string; coordinatorAgent: string }> {
  const suffix = randomUUID().slice(0, 8);
  const memberAgent = `fault-member-${suffix}`;
  const coordinatorAgent = `fault-coord-${suffix}`;
  const member = await api.request(`/api/v1/admin/agents/${memberAgent}`, { method: 'PUT', body: { name: memberAgent, model: memberModel } });
  assert.equal(member.status, 201, member.text);
  const multiAgent = { enabled: true, agents: [memberAgent], ...(cap === undefined ? {} : { max_concurrent_subagents: cap }) };
  const coordinator = await api.request(`/api/v1/admin/agents/${coordinatorAgent}`, { method: 'PUT', body: { name: coordinatorAgent, model: coordinatorModel, multi_agent: multiAgent } });
  assert.equal(coordinator.status, 201, coordinator.text);
  return { memberAgent, coordinatorAgent };
}

/** The coordinator's turn ends, completed; what the tree looked like when it did not. */
async function coordinatorCompletes(api: Api, coordinator: string, infra: FaultInfra, diagnostic: (message: string) => void): Promise<void> {
  const turns = await waitUntil(
    'the coordinator turn to end',
    async () => {
      const list = await api.turns(coordinator);
      return list[0] && ['completed', 'failed', 'cancelled'].includes(list[0].status) ? list : undefined;
    },
    { timeoutMs: TAKEOVER_BUDGET_MS * 2, intervalMs: 200 },
  ).catch(async (error: unknown) => {
    const tree = await infra.db.query(
      `SELECT s.id, s.depth, s.pending_input_count, s.queue_paused, t.status AS turn, t.waitpoint->>'kind' AS waitpoint, r.status AS run, r.lease_owner
       FROM sessions s LEFT JOIN turns t ON t.session_id = s.id LEFT JOIN runs r ON r.turn_id = t.id WHERE s.root_session_id = $1 ORDER BY s.depth, r.seq`,
      [coordinator],
    );
    const signals = await infra.db.query(`SELECT member_session_id, turn_id, status, delivered_at IS NOT NULL AS delivered FROM cooperation_signals WHERE parent_session_id = $1`, [coordinator]);
    diagnostic(`tree ${JSON.stringify(tree.rows)} signals ${JSON.stringify(signals.rows)}`);
    throw error;
  });
  assert.equal(turns[0].status, 'completed', JSON.stringify(turns[0].error));
}

describe('faults: cooperation', () => {
  let infra: FaultInfra;
  let fake: FakeOpenAi;
  before(async () => {
    fake = await startFakeOpenAi(0);
    infra = await startFaultInfra('cooperation');
  });
  after(async () => {
    await fake?.close();
    await infra?.stop();
  });

  it('k. kill -9 after the spawning steps: the takeover spawns nothing twice, and the wait gets both answers', { timeout: 180_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'k-cooperation', { apis: 1, workers: 2, env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake' } });
    try {
      const api = cluster.api();
const model = `coord-${randomUUID()}`;
      const { memberAgent, coordinatorAgent } = await putTree(api, 'scripted:echo', `openai:${model}`, 2);
      const task = (word: string): string => JSON.stringify({ task: `[[delay:200]] [[words:5]] ${word}`, agent_id: memberAgent, name: word });
      fake.script(model, [
        { tool_calls: [{ id: 'call_create_a', name: 'create_subagent', arguments: task('alpha') }, { id: 'call_create_b', name: 'create_subagent', arguments: task('beta') }] },
        // The call after both creates committed never answers: its worker is killed there.
        { hang: true },
        { tool_calls: [{ id: 'call_wait', name: 'wait_subagents', arguments: '{}' }] },
        { text: 'Both members answered.' },
      ]);

      const created = await api.request(`${API}/sessions`, { body: { agent_id: coordinatorAgent, input: 'Coordinate two members.' }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const coordinator = created.body.id as string;
      try {
        await waitUntil('the second model call to hang', () => (fake.requests(model).length === 2 ? true : undefined), { timeoutMs: 20_000, intervalMs: 50 });
      } catch (error) {
        const { rows } = await infra.db.query(`SELECT kind, status, ref FROM run_steps WHERE session_id = $1 ORDER BY seq`, [coordinator]);
        const { rows: runs } = await infra.db.query(`SELECT status, lease_owner, lease_expires_at > now() AS held FROM runs WHERE session_id = $1`, [coordinator]);
        t.diagnostic(`requests ${fake.requests(model).length}; steps ${JSON.stringify(rows)}; runs ${JSON.stringify(runs)}`);
        throw error;
      }

      const { rows: held } = await infra.db.query(`SELECT lease_owner FROM runs WHERE session_id = $1 AND status = 'in_progress' AND lease_owner IS NOT NULL`, [coordinator]);
      assert.equal(held.length, 1, 'one leased run holds the coordinator');
      const holder = await cluster.workerByLeaseOwner(held[0].lease_owner);
      assert.ok(holder, 'a worker of this cluster holds the coordinator');
      await replaceWorker(cluster, holder);
      await coordinatorCompletes(api, coordinator, infra, (message) => t.diagnostic(message));

      const { rows: members } = await infra.db.query(`SELECT id, spawned_call_id, subagent->>'name' AS name FROM sessions WHERE parent_session_id = $1 ORDER BY spawned_call_id`, [coordinator]);
      assert.deepEqual(members.map((m) => [m.spawned_call_id, m.name]), [['call_create_a', 'alpha'], ['call_create_b', 'beta']], 'exactly the two members, none twice');
      const { rows: steps } = await infra.db.query(`SELECT ref, count(*)::int AS n FROM run_steps WHERE session_id = $1 AND kind = 'tool_call' AND status = 'completed' GROUP BY ref ORDER BY ref`, [coordinator]);
      assert.deepEqual(steps.map((s) => [s.ref, s.n]), [['call_create_a', 1], ['call_create_b', 1], ['call_wait', 1]]);
      const { rows: inputs } = await infra.db.query(`SELECT session_id, count(*)::int AS n FROM inputs WHERE session_id = ANY($1::uuid[]) GROUP BY session_id`, [members.map((m) => m.id)]);
      assert.deepEqual(inputs.map((i) => i.n), [1, 1], 'one first input per member');
      const items = await api.request(`${API}/sessions/${coordinator}/items?order=asc&limit=100`);
      const waitOutput = (items.body.data as any[]).find((i) => i.type === 'function_call_output' && i.call_id === 'call_wait');
      const answers = JSON.parse(waitOutput.output).subagents.map((m: any) => [m.name, m.status]);
      assert.deepEqual(answers, [['alpha', 'completed'], ['beta', 'completed']]);

      const sessions = [coordinator, ...members.map((m) => m.id as string)];
      await waitQuiescent(infra, sessions);
      await assertInvariants(infra, sessions, (message) => t.diagnostic(message));
    } finally {
      await cluster.stop();
    }
  });

  it('l. kill -9 of a member\'s worker while its coordinator waits: nothing of the coordinator runs meanwhile, and the wake-up arrives', { timeout: 180_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'l-cooperation', { apis: 1, workers: 2, env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake' } });
    try {
      const api = cluster.api();
const coordinatorModel = `coord-${randomUUID()}`;
      const memberModel = `member-${randomUUID()}`;
      const { memberAgent, coordinatorAgent } = await putTree(api, `openai:${memberModel}`, `openai:${coordinatorModel}`);
      const task = (word: string): string => JSON.stringify({ task: word, agent_id: memberAgent, name: word });
      fake.script(coordinatorModel, [
        { tool_calls: [{ id: 'call_create_a', name: 'create_subagent', arguments: task('alpha') }, { id: 'call_create_b', name: 'create_subagent', arguments: task('beta') }] },
        { tool_calls: [{ id: 'call_wait', name: 'wait_subagents', arguments: '{}' }] },
        { text: 'Both members answered.' },
      ]);
      // The first member to call its model hangs there (its worker is killed); the other answers, and the takeover answers too.
      fake.script(memberModel, [{ hang: true }, { text: 'first answer' }, { text: 'answer after the takeover' }]);

      const created = await api.request(`${API}/sessions`, { body: { agent_id: coordinatorAgent, input: 'Coordinate two members.' }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const coordinator = created.body.id as string;
      await waitUntil(
        'the coordinator to wait for its members',
        async () => {
          const { rows } = await infra.db.query(`SELECT waitpoint->>'kind' AS kind FROM turns WHERE session_id = $1 AND status = 'in_progress'`, [coordinator]);
          return rows[0]?.kind === 'cooperation' ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      const { rows: coordinatorRuns } = await infra.db.query(`SELECT count(*)::int AS n FROM runs WHERE session_id = $1 AND status = 'in_progress'`, [coordinator]);
      assert.equal(coordinatorRuns[0].n, 0, 'nothing of the waiting coordinator runs (nothing polls)');
      await waitUntil('a member to hang in its model call', () => (fake.requests(memberModel).length >= 2 ? true : undefined), { timeoutMs: 20_000, intervalMs: 50 });
      const memberHeld = await waitUntil(
        'the hanging member run',
        async () => {
          const { rows } = await infra.db.query(
            `SELECT r.lease_owner FROM runs r JOIN sessions s ON s.id = r.session_id WHERE s.parent_session_id = $1 AND r.status = 'in_progress' AND r.lease_owner IS NOT NULL`,
            [coordinator],
          );
          return rows.length === 1 ? rows[0] : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 100 },
      );
      const holder = await cluster.workerByLeaseOwner(memberHeld.lease_owner);
      assert.ok(holder, 'a worker of this cluster holds the hanging member');
      await replaceWorker(cluster, holder);
      await coordinatorCompletes(api, coordinator, infra, (message) => t.diagnostic(message));
      const items = await api.request(`${API}/sessions/${coordinator}/items?order=asc&limit=100`);
      const waitOutput = (items.body.data as any[]).find((i) => i.type === 'function_call_output' && i.call_id === 'call_wait');
      const answers = JSON.parse(waitOutput.output).subagents.map((m: any) => m.answer).sort();
      assert.deepEqual(answers, ['answer after the takeover', 'first answer']);
      const { rows: members } = await infra.db.query(`SELECT id FROM sessions WHERE parent_session_id = $1`, [coordinator]);
      const { rows: memberRuns } = await infra.db.query(`SELECT status FROM runs WHERE session_id = ANY($1::uuid[]) ORDER BY status`, [members.map((m) => m.id)]);
      assert.deepEqual(memberRuns.map((r) => r.status), ['completed', 'completed', 'interrupted'], 'the killed member run was taken over');

      const sessions = [coordinator, ...members.map((m) => m.id as string)];
      await waitQuiescent(infra, sessions);
      await assertInvariants(infra, sessions, (message) => t.diagnostic(message));
    } finally {
      await cluster.stop();
    }
  });
});
