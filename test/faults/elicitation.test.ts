// An MCP call that asked the user something (elicitation) is held open by the worker that ran it;
// the run that resumes the turn with the user's answer may land on any worker. Here it lands on
// another one: the answer reaches the holder through Redis, the holder hands it to the server, and
// the call's real result comes back to the resumed run: the model gets it, not outcome_unknown.
//
// The model is a fake OpenAI-compatible server and the tool the MCP reference server, both in this
// test process on 127.0.0.1 (test/support/fake-openai.ts, test/support/everything-server.ts).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type EverythingServer, startEverythingServer } from '../support/everything-server.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, newKey } from './client.js';
import { Cluster, type FaultInfra, startFaultInfra, waitUntil } from './harness.js';
import { assertSessionSettled, runsOfTurn, turnAtElicitation } from './steps.js';

/** The MCP server is on loopback: allowed for the agents an administrator owns, as a deployment reaches an internal server. */
const MCP_ENV = { MCP_ALLOWED_HOSTS: '127.0.0.1' };
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'incomplete']);

describe('faults: elicitation across workers', () => {
  let infra: FaultInfra;
  let fake: FakeOpenAi;
  let everything: EverythingServer;
  before(async () => {
    fake = await startFakeOpenAi(0);
    everything = await startEverythingServer();
    infra = await startFaultInfra('elicitation');
  });
  after(async () => {
    await fake?.close();
    await everything?.close();
    await infra?.stop();
  });

  it('k. the answer to an elicitation held by worker A is given to the turn resumed on worker B: the call ends with its real result, called once', { timeout: 180_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'k-elicitation-two-workers', {
      apis: 1,
      workers: 1,
      env: { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-fault-fake', ...MCP_ENV },
    });
    try {
      const api = cluster.api();
      const model = `fault-elicit-two-${randomUUID()}`;
      const { sessionId, turnId, waitpointId, toolCalls } = await turnAtElicitation(api, { everything, fake }, model, 'Thanks, Ada.');
      // The only worker so far ran the call and holds it open.
      const [holder] = cluster.workers;

      // A second worker; A is frozen while the answer is submitted, so only B can take the resumed run.
      const other = await cluster.addWorker();
      cluster.signal(holder!, 'SIGSTOP');
      const answered = await api.request(`${API}/sessions/${sessionId}/events`, {
        body: { events: [{ type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: waitpointId, response: { type: 'answer', answers: [{ question_id: 'action', answer: 'accept' }, { question_id: 'name', answer: 'Ada' }] } }] },
        idempotencyKey: newKey('answer'),
      });
      assert.equal(answered.status, 202, answered.text);
      const resumed = await waitUntil(
        'worker B to take the resumed run',
        async () => {
          const runs = await runsOfTurn(infra, turnId);
          const latest = runs.at(-1);
          return runs.length > 1 && latest?.lease_owner ? latest : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 50 },
      );
      // A wakes up still holding the call open; B, following the resumed run, reaches it there.
      cluster.signal(holder!, 'SIGCONT');
      assert.equal(await cluster.workerByLeaseOwner(resumed.lease_owner!), other, 'the resumed run is on worker B');

      const ended = await waitUntil(
        'the turn to end',
        async () => {
          const res = await api.turn(sessionId, turnId);
          return TERMINAL.has(res.body.status) ? res.body : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      const items = (await api.request(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data as any[];
      const output = items.find((i) => i.type === 'function_call_output' && i.call_id === 'call_elicit');
      assert.equal(output.yuxi.success, true, output.output);
      assert.match(output.output, /User provided the requested information/);
      assert.match(output.output, /Name: Ada/);
      assert.doesNotMatch(output.output, /outcome_unknown/);
      const sent = everything.messages.find((m) => m.method === undefined && (m.result as { action?: string } | undefined)?.action === 'accept');
      assert.deepEqual((sent?.result as { content?: Record<string, unknown> }).content?.name, 'Ada', 'the answer reached the server through worker A');
      const last = fake.requests(model).at(-1) as any;
      assert.ok(last.messages.some((m: any) => m.role === 'tool' && /Name: Ada/.test(m.content)), 'the model was given the real result');
      assert.equal(everything.count('tools/call'), toolCalls, 'the call was never sent again');
      t.diagnostic(`runs: ${(await runsOfTurn(infra, turnId)).map((r) => `${r.seq}:${r.status}`).join(', ')}; output: ${String(output.output).slice(0, 80)}`);
      await assertSessionSettled(infra, sessionId, ['Thanks, Ada.'], t);
    } finally {
      await cluster.stop();
    }
  });
});
