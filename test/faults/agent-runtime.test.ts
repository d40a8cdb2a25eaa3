// Fault scenarios of the agent runtime: the worker running a turn's MCP tool call dies (kill -9)
// after the model step that asked for it was stored and while the call is in flight. Another
// worker takes the turn over in a new run, planning from the committed steps: the stored model
// call is never repeated; the started call is run again (same idempotency key) only when the tool
// is declared idempotent, otherwise the model is told its outcome is unknown.
//
// The model is a fake OpenAI-compatible server and the tool a real MCP server, both in this test
// process on 127.0.0.1 (test/support/fake-openai.ts, test/support/mcp-server.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startEverythingServer } from '../support/everything-server.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { type McpCall, startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { type Api, API, newKey } from './client.js';
import { Cluster, type FaultInfra, type Proc, RECOVERY_SWEEP_MS, RUN_LEASE_MS, startFaultInfra, waitUntil } from './harness.js';
import { assertSessionSettled, runsOfTurn, turnAtElicitation } from './steps.js';

/**
 * The MCP server is on loopback, which a deployment refuses (MCP_ALLOW_PRIVATE_NETWORKS=false):
 * allowed here the way a deployment reaches an internal server, for the agents an administrator
 * owns (these are saved with the bootstrap administrator's key).
 */
const MCP_ENV = { MCP_ALLOWED_HOSTS: '127.0.0.1' };

/** How long the MCP tool takes: the worker is killed well inside it. */
const TOOL_DELAY_MS = 4_000;
const CALL_ID = 'call_fx_1';
/** Lease expiry + a sweep + the rest of the tool's delay + a model call + margin for a small machine. */
const TAKEOVER_BUDGET_MS = RUN_LEASE_MS + RECOVERY_SWEEP_MS + TOOL_DELAY_MS + 15_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'incomplete']);

describe('faults: agent runtime', () => {
  let infra: FaultInfra;
  let fake: FakeOpenAi;
  let mcp: TestMcpServer;
  before(async () => {
    fake = await startFakeOpenAi(0);
    mcp = await startMcpServer();
    infra = await startFaultInfra('agent-runtime');
  });
  after(async () => {
    await fake?.close();
    await mcp?.close();
    await infra?.stop();
  });

  interface KilledTurn {
    cluster: Cluster;
    api: Api;
    session: any;
    turnId: string;
    key: string;
    model: string;
    killedRunId: string;
    finalText: string;
    note: string;
    /** The turn's detail (GET …/turns/{id}) once it ended. */
    turn: any;
    /** The turn's items (GET …/turns/{id}/items, ascending). */
    items: any[];
  }

  /**
   * An agent with one MCP tool (`record_side_effect`, idempotent or not); its model asks for the
   * tool once, then answers. The worker running the call is killed while the MCP server holds it;
   * returns once the turn ended, with what the checks need. The caller stops the cluster.
   */
  async function killDuringToolCall(cluster: Cluster, scenario: string, idempotent: boolean, t: { diagnostic: (message: string) => void }): Promise<KilledTurn> {
    const api = cluster.api();
    const agentId = `fault-${randomUUID().slice(0, 8)}`;
    const model = `fault-${scenario}-${randomUUID()}`;
    const note = `note-${randomUUID().slice(0, 8)}`;
    const finalText = `Recorded (${scenario}).`;
    const tool = { type: 'mcp', server_label: 'fx', server_url: mcp.url, allowed_tools: ['record_side_effect'], ...(idempotent ? { idempotent: true } : {}) };
    const put = await api.request(`/api/v1/admin/agents/${agentId}`, { method: 'PUT', body: { name: agentId, model: `openai:${model}`, tools: [tool] } });
    assert.equal(put.status, 201, `PUT agent: ${put.text}`);
    fake.script(model, [
      { tool_calls: [{ id: CALL_ID, name: 'record_side_effect', arguments: JSON.stringify({ note, delay_ms: TOOL_DELAY_MS }) }] },
      { text: finalText },
    ]);

    const created = await api.request(`${API}/sessions`, { body: { agent_id: agentId, input: `record ${note}` }, idempotencyKey: newKey('create') });
    assert.equal(created.status, 201, `create session: ${created.text}`);
    const session = created.body;
    const turnId = await waitUntil('the session’s first turn', async () => (await api.turns(session.id))[0]?.id as string | undefined);
    const key = `${turnId}:${CALL_ID}`;

    await waitUntil('the MCP server to receive the tool call', () => mcp.calls.some((c) => c.metaKey === key), { timeoutMs: 20_000, intervalMs: 50 });
    const running = (await runsOfTurn(infra, turnId)).filter((r) => r.status === 'in_progress' && r.lease_owner);
    assert.equal(running.length, 1, `one leased run holds the turn: ${JSON.stringify(running)}`);
    const killedRunId = running[0]!.id;
    const holder: Proc | undefined = await cluster.workerByLeaseOwner(running[0]!.lease_owner!);
    assert.ok(holder, `a worker of this cluster holds the run (lease_owner ${running[0]!.lease_owner})`);

    cluster.signal(holder, 'SIGKILL');
    assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
    const killedAt = Date.now();
    // The worker died mid-call: the call is durably `started` by the dead run, without a result,
    // and the tool had not finished yet.
    const { rows: stepRows } = await infra.db.query(`SELECT run_id, status FROM run_steps WHERE turn_id = $1 AND kind = 'tool_call' AND ref = $2`, [turnId, CALL_ID]);
    assert.deepEqual(stepRows, [{ run_id: killedRunId, status: 'started' }], 'the call was started and has no stored result');
    assert.equal(mcp.effects.filter((e) => e.key === key).length, 0, 'the tool was still running when its worker died');
    assert.equal(fake.requests(model).length, 1, 'one model call before the kill');
    // Another worker must be there to take the turn over.
    assert.ok(cluster.workers.some((w) => w !== holder && w.child.exitCode === null && w.child.signalCode === null), 'another worker is alive');

    const ended = await waitUntil(
      'the turn to end',
      async () => {
        const res = await api.turn(session.id, turnId);
        return res.status === 200 && TERMINAL.has(res.body.status) ? res.body : undefined;
      },
      { timeoutMs: TAKEOVER_BUDGET_MS, intervalMs: 200 },
    );
    t.diagnostic(`turn ${ended.status} ${Date.now() - killedAt} ms after SIGKILL (budget ${TAKEOVER_BUDGET_MS} ms)`);
    assert.equal(ended.status, 'completed', `the turn completed: ${JSON.stringify(ended)}`);

    const itemsRes = await api.request(`${API}/sessions/${session.id}/turns/${turnId}/items?order=asc&limit=100`);
    assert.equal(itemsRes.status, 200, itemsRes.text);
    return { cluster, api, session, turnId, key, model, killedRunId, finalText, note, turn: ended, items: itemsRes.body.data };
  }

  /** What both scenarios share after the takeover: one stored model step, one call and one output, an interrupted run then the completed one. */
  function assertTakeover(k: KilledTurn, t: { diagnostic: (message: string) => void }): { output: any; second: any } {
    const runs = k.turn.yuxi.runs as any[];
    t.diagnostic(`runs: ${runs.map((r) => `${r.status}${r.resume_from_run_id ? `<-${String(r.resume_from_run_id).slice(-6)}` : ''}`).join(' ')}`);
    assert.deepEqual(
      runs.map((r) => r.status),
      ['interrupted', 'completed'],
      'the killed run is interrupted, the takeover completed',
    );
    assert.equal(runs[0].id, k.killedRunId, 'the interrupted run is the one whose worker was killed');
    assert.equal(runs[1].resume_from_run_id, k.killedRunId, 'the completed run took over from it');
    assert.equal(k.turn.yuxi.result_run_id, runs[1].id, 'the result comes from the takeover');

    const requests = fake.requests(k.model) as any[];
    assert.equal(requests.length, 2, 'the stored model call was not repeated: one call before the kill, one after the tool result');

    const calls = k.items.filter((i) => i.type === 'function_call');
    const outputs = k.items.filter((i) => i.type === 'function_call_output');
    assert.equal(calls.length, 1, `one function_call item: ${JSON.stringify(calls)}`);
    assert.equal(outputs.length, 1, `one function_call_output item: ${JSON.stringify(outputs)}`);
    assert.equal(calls[0].call_id, CALL_ID);
    assert.equal(calls[0].name, 'record_side_effect');
    assert.equal(outputs[0].call_id, CALL_ID);
    assert.equal(calls[0].yuxi.run_id, k.killedRunId, 'the function_call was stored by the killed run');
    assert.equal(outputs[0].yuxi.run_id, runs[1].id, 'the output was stored by the takeover');

    const second = requests[1];
    const last = second.messages.at(-1);
    assert.equal(last.role, 'tool', `the second model call ends with the tool message: ${JSON.stringify(last)}`);
    assert.equal(last.tool_call_id, CALL_ID);
    assert.equal(last.content, outputs[0].output, 'the model saw the stored output');
    return { output: outputs[0], second };
  }

  const keysOf = (calls: McpCall[]): string[] => calls.flatMap((c) => [c.metaKey ?? '(no _meta key)', c.headerKey ?? '(no header key)']);

  it('h. kill -9 during an idempotent MCP call: the takeover runs it again under the same key, the stored model call is not repeated', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'h-agent-kill9-idempotent-tool', {
      apis: 1,
      workers: 2,
      env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake', ...MCP_ENV },
    });
    try {
      const k = await killDuringToolCall(cluster, 'idem', true, t);
      const { output } = assertTakeover(k, t);

      const calls = mcp.calls.filter((c) => c.metaKey === k.key || c.headerKey === k.key);
      assert.equal(calls.length, 2, `the call was executed again after the takeover: ${JSON.stringify(calls)}`);
      assert.deepEqual(keysOf(calls), [k.key, k.key, k.key, k.key], 'both executions carry the stable key <turn_id>:<call_id> in _meta and the header');
      for (const call of calls) assert.deepEqual(call.args, { note: k.note, delay_ms: TOOL_DELAY_MS });
      assert.equal(mcp.effects.filter((e) => e.key === k.key).length, 1, 'the side effect took place once (the tool honours the key)');
      assert.equal(output.output, `recorded ${k.note}`);
      assert.equal(output.yuxi.success, true);

      await assertSessionSettled(infra, k.session.id, [k.finalText], t);
    } finally {
      await cluster.stop();
    }
  });

  it('i. kill -9 during a non-idempotent MCP call: never run twice, the model gets outcome_unknown', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'i-agent-kill9-unknown-outcome', {
      apis: 1,
      workers: 2,
      env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake', ...MCP_ENV },
    });
    try {
      const k = await killDuringToolCall(cluster, 'once', false, t);
      const { output, second } = assertTakeover(k, t);

      const calls = mcp.calls.filter((c) => c.metaKey === k.key || c.headerKey === k.key);
      assert.equal(calls.length, 1, `the call was never executed twice: ${JSON.stringify(calls)}`);
      assert.deepEqual(keysOf(calls), [k.key, k.key]);
      assert.ok(String(output.output).startsWith('outcome_unknown'), `the output is outcome_unknown: ${output.output}`);
      assert.equal(output.yuxi.success, false);
      assert.ok(String(second.messages.at(-1).content).startsWith('outcome_unknown'), 'the model was told the outcome is unknown');

      await assertSessionSettled(infra, k.session.id, [k.finalText], t);
    } finally {
      await cluster.stop();
    }
  });

  it('j. kill -9 the worker holding an MCP call that waits for the user (elicitation): the answer finds it gone, the model gets outcome_unknown, nothing is called twice', { timeout: 120_000 }, async (t) => {
    const everything = await startEverythingServer();
    const cluster = await Cluster.start(infra, 'j-agent-kill9-elicitation', {
      apis: 1,
      workers: 1,
      env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake', ...MCP_ENV },
    });
    try {
      const api = cluster.api();
      const model = `fault-elicit-${randomUUID()}`;
      const { sessionId, turnId, waitpointId } = await turnAtElicitation(api, { everything, fake }, model, 'Could not tell.');

      // The only worker (it holds the call open) dies; a fresh one takes its place.
      const [holder] = cluster.workers;
      cluster.signal(holder!, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder!, 5_000), 'the holder is gone');
      await cluster.addWorker();

      const answered = await api.request(`${API}/sessions/${sessionId}/events`, {
        body: { events: [{ type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: waitpointId, response: { type: 'answer', answers: [{ question_id: 'action', answer: 'accept' }, { question_id: 'name', answer: 'Ada' }] } }] },
        idempotencyKey: newKey('answer'),
      });
      assert.equal(answered.status, 202, answered.text);
      const ended = await waitUntil(
        'the turn to end',
        async () => {
          const res = await api.turn(sessionId, turnId);
          return TERMINAL.has(res.body.status) ? res.body : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      const items = (await api.request(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data as any[];
      const output = items.find((i) => i.type === 'function_call_output');
      assert.equal(output.yuxi.success, false);
      assert.match(output.output, /^outcome_unknown/);
      const last = fake.requests(model).at(-1) as any;
      assert.ok(last.messages.some((m: any) => m.role === 'tool' && /^outcome_unknown/.test(m.content)), 'the model was told');
      assert.equal(everything.count('tools/call'), 1, 'the call was never sent again');
      t.diagnostic(`turn ${ended.status}; output: ${String(output.output).slice(0, 80)}`);
      await assertSessionSettled(infra, sessionId, ['Could not tell.'], t);
    } finally {
      await cluster.stop();
      await everything.close();
    }
  });
});
