// Fault scenario of the usage ledger: the worker running a turn is killed (kill -9) after its first
// model call was committed (the step that asked for a tool) and before the next model call. The
// takeover must count every call exactly once: the committed call is in the ledger once (written
// with its step), the tool call and the second model call once each (written by the takeover),
// and the run and turn sums agree with the ledger and with the calls the model really received.
//
// The model is a fake OpenAI-compatible server and the tool a real MCP server holding the call
// until the test releases it, both in this test process (test/support/fake-openai.ts,
// test/support/mcp-server.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { API, newKey } from './client.js';
import { Cluster, type FaultInfra, type Proc, RECOVERY_SWEEP_MS, RUN_LEASE_MS, startFaultInfra, waitUntil } from './harness.js';
import { runsOfTurn } from './steps.js';

/** The MCP server is on loopback: allowed here the way a deployment reaches an internal server. */
const MCP_ENV = { MCP_ALLOWED_HOSTS: '127.0.0.1' };
const CALL_ID = 'call_usage_1';
const TAKEOVER_BUDGET_MS = RUN_LEASE_MS + RECOVERY_SWEEP_MS + 20_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'incomplete']);

interface LedgerRow {
  kind: string;
  run_id: string;
  model: string | null;
  tool: string | null;
  input_tokens: string;
  output_tokens: string;
  model_calls: number;
  tool_calls: number;
  cost_microusd: string | null;
}

describe('faults: usage ledger', () => {
  let infra: FaultInfra;
  let fake: FakeOpenAi;
  let mcp: TestMcpServer;
  before(async () => {
    fake = await startFakeOpenAi(0);
    mcp = await startMcpServer();
    infra = await startFaultInfra('usage');
  });
  after(async () => {
    await fake?.close();
    await mcp?.close();
    await infra?.stop();
  });

  const ledgerOf = async (turnId: string): Promise<LedgerRow[]> =>
    (
      await infra.db.query(
        `SELECT kind, run_id, model, tool, input_tokens::text, output_tokens::text, model_calls, tool_calls, cost_microusd::text FROM usage_ledger WHERE turn_id = $1 ORDER BY at, kind`,
        [turnId],
      )
    ).rows as LedgerRow[];

  it('kill -9 after a model call committed, before the next: the takeover counts every call exactly once', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'usage-kill9-between-model-calls', { apis: 1, workers: 2, env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake', ...MCP_ENV } });
    try {
      const api = cluster.api();
      const agentId = `fault-${randomUUID().slice(0, 8)}`;
      const model = `fault-usage-${randomUUID()}`;
      const note = `usage-${randomUUID().slice(0, 8)}`;
      const tool = { type: 'mcp', server_label: 'fx', server_url: mcp.url, allowed_tools: ['hold'], idempotent: true };
      assert.equal((await api.request(`/api/v1/admin/agents/${agentId}`, { method: 'PUT', body: { name: agentId, model: `openai:${model}`, tools: [tool] } })).status, 201);
      // 2 and 8 micro-dollars a token: the first call costs 100*2 + 10*8, the second 150*2 + 5*8.
      assert.equal((await api.request(`/api/v1/admin/model-prices/openai:${model}`, { method: 'PUT', body: { input_per_mtok_usd: 2, output_per_mtok_usd: 8 } })).status, 201);
      fake.script(model, [
        { tool_calls: [{ id: CALL_ID, name: 'hold', arguments: JSON.stringify({ note }) }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
        { text: 'Held and released.', usage: { prompt_tokens: 150, completion_tokens: 5 } },
      ]);

      const created = await api.request(`${API}/sessions`, { body: { agent_id: agentId, input: `hold ${note}` }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const session = created.body;
      const turnId = await waitUntil('the session’s first turn', async () => (await api.turns(session.id))[0]?.id as string | undefined);
      // The tool call is in flight: the model step that asked for it has committed.
      await waitUntil('the MCP server to hold the tool call', () => mcp.calls.some((c) => c.metaKey === `${turnId}:${CALL_ID}`), { timeoutMs: 20_000, intervalMs: 50 });
      const running = (await runsOfTurn(infra, turnId)).filter((r) => r.status === 'in_progress' && r.lease_owner);
      assert.equal(running.length, 1, `one leased run holds the turn: ${JSON.stringify(running)}`);
      const killedRunId = running[0]!.id;
      const holder: Proc | undefined = await cluster.workerByLeaseOwner(running[0]!.lease_owner!);
      assert.ok(holder, 'a worker of this cluster holds the run');
      cluster.signal(holder, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');

      // What the dead worker committed: its model call, once, with its step (and nothing of the call in flight).
      const before = await ledgerOf(turnId);
      assert.deepEqual(
        before.map((r) => [r.kind, r.run_id, r.input_tokens, r.output_tokens, r.cost_microusd]),
        [['model_call', killedRunId, '100', '10', '280']],
      );
      assert.equal(fake.requests(model).length, 1, 'one model call before the kill');
      mcp.release(note);

      const api2 = cluster.api();
      const ended = await waitUntil(
        'the turn to end',
        async () => {
          const res = await api2.turn(session.id, turnId);
          return res.status === 200 && TERMINAL.has(res.body.status) ? res.body : undefined;
        },
        { timeoutMs: TAKEOVER_BUDGET_MS, intervalMs: 200 },
      );
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      const runs = ended.yuxi.runs as any[];
      assert.deepEqual(runs.map((r) => r.status), ['interrupted', 'completed']);

      // Exactly once: one row per call the model and the tool really received, none repeated.
      const modelCallsMade = fake.requests(model).length;
      assert.equal(modelCallsMade, 2, 'the committed model call was not repeated');
      const rows = await ledgerOf(turnId);
      t.diagnostic(`ledger: ${rows.map((r) => `${r.kind}@${r.run_id.slice(-6)}`).join(' ')}`);
      assert.deepEqual(rows.map((r) => [r.kind, r.run_id]).sort(), [['model_call', killedRunId], ['model_call', runs[1].id], ['tool_call', runs[1].id]].sort());
      assert.equal(rows.filter((r) => r.kind === 'model_call').length, modelCallsMade);

      const sum = (key: keyof LedgerRow): number => rows.reduce((total, r) => total + Number(r[key] ?? 0), 0);
      const expected = { input_tokens: 250, output_tokens: 15, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 265, model_calls: 2, tool_calls: 1, cost_microusd: 620 };
      assert.deepEqual({ input: sum('input_tokens'), output: sum('output_tokens'), model_calls: sum('model_calls'), tool_calls: sum('tool_calls'), cost: sum('cost_microusd') }, { input: 250, output: 15, model_calls: 2, tool_calls: 1, cost: 620 });
      assert.deepEqual(ended.yuxi.usage, expected, 'the turn sums its ledger');
      assert.deepEqual(runs[0].usage, { ...expected, input_tokens: 100, output_tokens: 10, total_tokens: 110, model_calls: 1, tool_calls: 0, cost_microusd: 280 }, 'the killed run kept what it committed');
      assert.deepEqual(runs[1].usage, { ...expected, input_tokens: 150, output_tokens: 5, total_tokens: 155, model_calls: 1, tool_calls: 1, cost_microusd: 340 }, 'the takeover added only its own calls');
      const got = await api2.request(`${API}/sessions/${session.id}`);
      assert.deepEqual(got.body.yuxi.usage, expected, 'the session sums the same ledger');
    } finally {
      await cluster.stop();
    }
  });
  // A budgeted turn whose worker dies with a tool call in flight: the dead run's reservation of that
  // call must not count against the takeover (its run holds no lease), else the takeover sees the
  // re-run tool call twice (committed + the dead reservation) and its next model call finds a
  // `tool_calls: 2` budget spent, and the turn fails with budget_exceeded.
  it('kill -9 with a budgeted tool call in flight: the dead run’s reservation does not count against the takeover', { timeout: 120_000 }, async () => {
    const cluster = await Cluster.start(infra, 'usage-kill9-budgeted-call', { apis: 1, workers: 2, env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake', ...MCP_ENV } });
    try {
      const api = cluster.api();
      const agentId = `fault-${randomUUID().slice(0, 8)}`;
      const model = `fault-usage-${randomUUID()}`;
      const note = `budget-${randomUUID().slice(0, 8)}`;
      const tool = { type: 'mcp', server_label: 'fx', server_url: mcp.url, allowed_tools: ['hold'], idempotent: true };
      assert.equal((await api.request(`/api/v1/admin/agents/${agentId}`, { method: 'PUT', body: { name: agentId, model: `openai:${model}`, tools: [tool] } })).status, 201);
      fake.script(model, [
        { tool_calls: [{ id: CALL_ID, name: 'hold', arguments: JSON.stringify({ note }) }], usage: { prompt_tokens: 100, completion_tokens: 10 } },
        { text: 'Held and released.', usage: { prompt_tokens: 150, completion_tokens: 5 } },
      ]);
      // Room for exactly the turn's one tool call and the model call after it.
      const body = { agent_id: agentId, input: `hold ${note}`, yuxi: { budget: { limits: { tool_calls: 2 }, on_exceeded: 'fail' } } };
      const created = await api.request(`${API}/sessions`, { body, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const session = created.body;
      const turnId = await waitUntil('the session’s first turn', async () => (await api.turns(session.id))[0]?.id as string | undefined);
      await waitUntil('the MCP server to hold the tool call', () => mcp.calls.some((c) => c.metaKey === `${turnId}:${CALL_ID}`), { timeoutMs: 20_000, intervalMs: 50 });
      const running = (await runsOfTurn(infra, turnId)).filter((r) => r.status === 'in_progress' && r.lease_owner);
      assert.equal(running.length, 1, `one leased run holds the turn: ${JSON.stringify(running)}`);
      const killedRunId = running[0]!.id;
      const reservationsOf = async (runId: string): Promise<string[]> =>
        ((await infra.db.query(`SELECT call_key FROM budget_reservations WHERE run_id = $1`, [runId])).rows as { call_key: string }[]).map((r) => r.call_key);
      assert.deepEqual(await reservationsOf(killedRunId), [`tool:${CALL_ID}`], 'the call in flight holds its reservation');
      const holder: Proc | undefined = await cluster.workerByLeaseOwner(running[0]!.lease_owner!);
      assert.ok(holder, 'a worker of this cluster holds the run');
      cluster.signal(holder, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
      mcp.release(note);

      const api2 = cluster.api();
      const ended = await waitUntil(
        'the turn to end',
        async () => {
          const res = await api2.turn(session.id, turnId);
          return res.status === 200 && TERMINAL.has(res.body.status) ? res.body : undefined;
        },
        { timeoutMs: TAKEOVER_BUDGET_MS, intervalMs: 200 },
      );
      assert.equal(ended.status, 'completed', JSON.stringify(ended.error ?? ended));
      assert.deepEqual((ended.yuxi.runs as any[]).map((r) => r.status), ['interrupted', 'completed']);
      // The interruption deleted what the dead run reserved; the budget counts the one tool call.
      assert.deepEqual(await reservationsOf(killedRunId), []);
      const got = await api2.request(`${API}/sessions/${session.id}`);
      assert.equal(got.body.yuxi.budget.spent.tool_calls, 1, JSON.stringify(got.body.yuxi.budget));
    } finally {
      await cluster.stop();
    }
  });
});
