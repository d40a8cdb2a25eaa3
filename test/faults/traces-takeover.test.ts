// Traces across a crash: the worker running a traced turn is killed (kill -9) while its second
// model call is in flight, after it exported the span of its first. Another worker takes the turn
// over; the spans of its run are in the client's trace, under the same stored parent, and linked to
// the lost run's `invoke_agent`, a span the dead worker never exported but whose id every worker
// derives from the run id (runSpanId): the exported chat span of the lost run names it as parent.
//
// The model is a fake OpenAI-compatible server, the tool a real MCP server and the collector an
// in-process OTLP receiver, all in this test process on 127.0.0.1.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { OTLP_KIND, type OtlpReceiver, randomHex, type ReceivedSpan, runSpanIdOf, startOtlpReceiver } from '../support/otlp-receiver.js';
import { API, newKey } from './client.js';
import { Cluster, type FaultInfra, RECOVERY_SWEEP_MS, RUN_LEASE_MS, startFaultInfra, waitUntil } from './harness.js';
import { runsOfTurn } from './steps.js';

/** Lease expiry + a sweep + a worker's start + a model call, with margin for a small machine. */
const TAKEOVER_BUDGET_MS = RUN_LEASE_MS + RECOVERY_SWEEP_MS + 30_000;
const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'incomplete']);
const CALL_ID = 'call_tr_1';

describe('faults: traces across a takeover', () => {
  let infra: FaultInfra;
  let fake: FakeOpenAi;
  let mcp: TestMcpServer;
  let receiver: OtlpReceiver;
  before(async () => {
    fake = await startFakeOpenAi(0);
    mcp = await startMcpServer();
    receiver = await startOtlpReceiver();
    infra = await startFaultInfra('traces-takeover');
  });
  after(async () => {
    await fake?.close();
    await mcp?.close();
    await receiver?.close();
    await infra?.stop();
  });

  it('kill -9 mid-turn: the run that takes over is in the same trace, linked to the lost run’s span, its chat spans its children', { timeout: 150_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'traces-takeover-kill9', {
      apis: 1,
      workers: 1,
      env: {
        OPENAI_BASE_URL: fake.url,
        OPENAI_API_KEY: 'sk-fault-fake',
        // The MCP server is on loopback: allowed for agents an administrator owns (saved with the bootstrap key).
        MCP_ALLOWED_HOSTS: '127.0.0.1',
        TRACING: 'on',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
        // Spans leave in batches every 200 ms: the lost run's first chat span is out well before the kill.
        OTEL_BSP_SCHEDULE_DELAY: '200',
      },
    });
    try {
      const api = cluster.api();
      const agentId = `fault-${randomUUID().slice(0, 8)}`;
      const model = `fault-trace-${randomUUID()}`;
      const tool = { type: 'mcp', server_label: 'calc', server_url: mcp.url, allowed_tools: ['add'] };
      const put = await api.request(`/api/v1/admin/agents/${agentId}`, { method: 'PUT', body: { name: agentId, model: `openai:${model}`, tools: [tool] } });
      assert.equal(put.status, 201, `PUT agent: ${put.text}`);
      // Call 1 asks for the tool; call 2 never answers (its worker dies); the takeover's call answers.
      fake.script(model, [{ tool_calls: [{ id: CALL_ID, name: 'add', arguments: '{"a":2,"b":3}' }] }, { hang: true }, { text: 'five, after the takeover' }]);

      const created = await api.request(`${API}/sessions`, { body: { agent_id: agentId }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, `create session: ${created.text}`);
      const sessionId: string = created.body.id;
      const traceId = randomHex(16);
      const sent = await api.request(`${API}/sessions/${sessionId}/events`, {
        body: { events: [{ type: 'agent.session.input.message', input: 'add 2 and 3' }] },
        idempotencyKey: newKey('msg'),
        headers: { traceparent: `00-${traceId}-${randomHex(8)}-01` },
      });
      assert.equal(sent.status, 202, sent.text);
      const turnId = await waitUntil('the session’s turn', async () => (await api.turns(sessionId))[0]?.id as string | undefined);

      // The second model call is in flight, and the lost run's first chat span was exported.
      await waitUntil('the second model call', () => fake.requests(model).length >= 2, { timeoutMs: 30_000, intervalMs: 50 });
      const running = (await runsOfTurn(infra, turnId)).filter((r) => r.status === 'in_progress' && r.lease_owner);
      assert.equal(running.length, 1, `one leased run holds the turn: ${JSON.stringify(running)}`);
      const lostRunId = running[0]!.id;
      const lostSpanId = runSpanIdOf(lostRunId);
      const [lostChat] = await receiver.waitForSpans((s) => s.traceId === traceId && s.name.startsWith('chat') && s.parentSpanId === lostSpanId, { timeoutMs: 15_000, what: 'chat spans of the lost run' });
      t.diagnostic(`lost run ${lostRunId}: invoke_agent ${lostSpanId} (derived), chat ${lostChat!.spanId} exported`);

      const holder = await cluster.workerByLeaseOwner(running[0]!.lease_owner!);
      assert.ok(holder, `a worker of this cluster holds the run (lease_owner ${running[0]!.lease_owner})`);
      cluster.signal(holder, 'SIGKILL');
      assert.ok(await cluster.waitExit(holder, 5_000), 'the killed worker is gone');
      const killedAt = Date.now();
      await cluster.addWorker();

      const ended = await waitUntil(
        'the turn to end',
        async () => {
          const res = await api.turn(sessionId, turnId);
          return res.status === 200 && TERMINAL.has(res.body.status) ? res.body : undefined;
        },
        { timeoutMs: TAKEOVER_BUDGET_MS, intervalMs: 200 },
      );
      t.diagnostic(`turn ${ended.status} ${Date.now() - killedAt} ms after SIGKILL`);
      assert.equal(ended.status, 'completed', JSON.stringify(ended));
      const runs = ended.yuxi.runs as any[];
      assert.equal(runs[0].id, lostRunId);
      const takeoverRun = runs.find((r) => r.resume_from_run_id === lostRunId);
      assert.ok(takeoverRun, `a run took over from the lost one: ${JSON.stringify(runs.map((r) => [r.id, r.status, r.resume_from_run_id]))}`);

      const [takeover] = await receiver.waitForSpans((s) => s.name.startsWith('invoke_agent') && s.attributes['yuxi.run_id'] === takeoverRun.id, { timeoutMs: 15_000, what: 'invoke_agent spans of the takeover' });
      const [accept] = await receiver.waitForSpans((s) => s.traceId === traceId && s.name === 'accept_input', { what: 'accept_input spans' });
      assert.equal(takeover!.traceId, traceId, 'the takeover is in the client’s trace');
      assert.equal(takeover!.kind, OTLP_KIND.INTERNAL);
      assert.equal(takeover!.parentSpanId, accept!.spanId, 'under the stored context, as the lost run was');
      assert.equal(takeover!.attributes['yuxi.run.takeover'], true);
      assert.notEqual(takeover!.spanId, lostSpanId, 'a span id of its own');
      // The run that takes over is a run of its own (resume_from_run_id names the lost one): its span id derives from its id, as every run's does.
      assert.equal(takeover!.spanId, runSpanIdOf(takeoverRun.id), 'its own run’s derived id');
      const link = takeover!.links.find((l) => l.spanId === lostSpanId);
      assert.ok(link, `linked to the lost run's invoke_agent: ${JSON.stringify(takeover!.links)}`);
      assert.equal(link.traceId, traceId);
      assert.equal(link.attributes['yuxi.link.reason'], 'takeover');
      // The dead worker never ended (so never exported) its invoke_agent: the link names it by its derived id only.
      assert.equal(receiver.spans.filter((s) => s.spanId === lostSpanId).length, 0, 'the lost invoke_agent was never exported');

      const chats = await receiver.waitForSpans((s) => s.traceId === traceId && s.name.startsWith('chat') && s.parentSpanId === takeover!.spanId, { what: 'chat spans of the takeover' });
      assert.equal(chats.length, 1, 'the takeover made one model call (the stored one was not repeated)');
      const inTrace: ReceivedSpan[] = receiver.trace(traceId);
      const strays = inTrace.filter((s) => s.name.startsWith('chat') && s.parentSpanId !== lostSpanId && s.parentSpanId !== takeover!.spanId);
      assert.deepEqual(strays.map((s) => s.spanId), [], 'every chat span of the trace belongs to one of the two runs');
      assert.ok(inTrace.length <= 100, `a bounded trace (${inTrace.length} spans)`);
      assert.deepEqual(receiver.errors, [], 'every export was decodable');
    } finally {
      await cluster.stop();
    }
  });
});
