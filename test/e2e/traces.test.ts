import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, newKey } from '../support/http.js';
import { type Caller, call, newProductUser, openStreamAs } from '../support/identity.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { OTLP_KIND, type OtlpReceiver, randomHex, type ReceivedSpan, runSpanIdOf, startOtlpReceiver } from '../support/otlp-receiver.js';
import { decodeJsonRequest } from '../support/otlp-wire.js';
import type { SseStream } from '../support/sse.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

// Traces on the suite's stack (scripts/test.mjs: TRACING=on, exporting to env.otlpPort over
// OTLP/HTTP protobuf, api-2 over OTLP/JSON as `yuxi-api-2`): a client's `traceparent` on a message
// gives one trace from the api's request span through acceptance, the worker's run, its model and
// MCP calls (whose requests carry the trace) to the webhook delivery, read back from an in-process
// receiver and from GET /sessions/{id}/traces. Message content stays off spans (capture is off).

/** Attributes that carry content, which only OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true allows. */
const CONTENT_ATTRIBUTES = ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result'];
const LOG_DIR = process.env.TEST_LOG_DIR ?? '';

/** The trace id of a W3C traceparent header. */
const traceIdOfHeader = (header: string | string[] | undefined): string | undefined => /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(String(header ?? ''))?.[1];
const parentIdOfHeader = (header: string | string[] | undefined): string | undefined => /^00-[0-9a-f]{32}-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(String(header ?? ''))?.[1];

/** Whether `span` descends from the span `ancestorId` among `spans` (bounded by their number). */
function descendsFrom(span: ReceivedSpan, ancestorId: string, spans: ReceivedSpan[]): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  let parent = span.parentSpanId;
  for (let hops = 0; parent !== undefined && hops <= spans.length; hops += 1) {
    if (parent === ancestorId) return true;
    parent = byId.get(parent)?.parentSpanId;
  }
  return false;
}

/** The spans GET /traces keeps for a turn, once its run's invoke_agent is stored (spans are stored in batches: polled, bounded). */
async function storedSpans(caller: Caller, sessionId: string, turnId: string): Promise<ReceivedSpan[]> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const res = await call(caller, `${API}/sessions/${sessionId}/traces`);
    assert.equal(res.status, 200, res.text);
    const entry = (res.body.data as { id: string; otlp: unknown }[]).find((e) => e.id === turnId);
    const spans = entry ? decodeJsonRequest(entry.otlp) : [];
    if (spans.some((s) => s.name.startsWith('invoke_agent'))) return spans;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  assert.fail(`the trace of turn ${turnId} is not stored`);
}

/** Log lines of a process (JSON lines) whose trace_id is `traceId`, once there is one (bounded). */
async function logLinesOf(name: string, traceId: string): Promise<Record<string, unknown>[]> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const text = readFileSync(path.join(LOG_DIR, `${name}.log`), 'utf8');
    const found = text
      .split('\n')
      .filter((line) => line.includes(traceId))
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as Record<string, unknown>];
        } catch {
          return [];
        }
      })
      .filter((line) => line.trace_id === traceId);
    if (found.length > 0) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return [];
}

describe('traces: one OpenTelemetry trace from the request through the worker, model, MCP tool and webhook', () => {
  let receiver: OtlpReceiver;
  let fake: FakeOpenAi;
  let mcp: TestMcpServer;
  let hooks: WebhookReceiver;
  const streams: SseStream[] = [];
  before(async () => {
    receiver = await startOtlpReceiver({ port: env.otlpPort });
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    mcp = await startMcpServer();
    hooks = await WebhookReceiver.start();
  });
  after(async () => {
    streams.forEach((stream) => stream.close());
    await hooks?.close();
    await mcp?.close();
    await fake?.close();
    await receiver?.close();
  });

  /** Sends one message as `caller` (on `baseUrl`) and waits for its turn to complete; the turn id and the receipt. */
  async function turnOf(caller: Caller, sessionId: string, text: string, headers: Record<string, string>, baseUrl?: string): Promise<{ turnId: string; receipt: any; status: number }> {
    const stream = await openStreamAs(caller, sessionId);
    streams.push(stream);
    const res = await call(caller, `${API}/sessions/${sessionId}/events`, { body: { events: [{ type: 'agent.session.input.message', input: text }] }, idempotencyKey: newKey('msg'), headers, baseUrl });
    assert.equal(res.status, 202, res.text);
    const turnId: string = (await stream.waitForType('agent.session.turn.created', undefined, 30_000)).data.turn_id;
    const ended = await stream.waitFor((e) => e.data?.turn_id === turnId && ['agent.session.turn.completed', 'agent.session.turn.failed'].includes(e.type), 60_000);
    assert.equal(ended.type, 'agent.session.turn.completed', JSON.stringify(ended.data));
    return { turnId, receipt: res.body, status: res.status };
  }

  interface Traced {
    caller: Caller;
    agentId: string;
    model: string;
    sessionId: string;
    turnId: string;
    inputId: string;
    traceId: string;
    clientSpanId: string;
    endpointId: string;
    text: string;
  }
  let traced: Promise<Traced> | undefined;
  /** The traced tool turn, once for the file: a product user's session on an agent with an MCP tool and a webhook endpoint, its message sent through api-2 with a traceparent. */
  const tracedTurn = (): Promise<Traced> =>
    (traced ??= (async () => {
      const { caller } = await newProductUser('traces owner');
      const endpoint = await call(caller, `${API}/webhooks`, { body: { url: `${hooks.url}/traces` } });
      assert.equal(endpoint.status, 201, endpoint.text);
      const { id: agentId, model } = await putAgent({ tools: [{ type: 'mcp', server_label: 'calc', server_url: mcp.url, allowed_tools: ['add'] }] });
      fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c1', name: 'add', arguments: '{"a":2,"b":3}' }] }, { text: 'five' }]);
      const created = await call(caller, `${API}/sessions`, { body: { agent_id: agentId }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const traceId = randomHex(16);
      const clientSpanId = randomHex(8);
      const text = `add two and three, secret ${randomUUID()}`;
      const { turnId, receipt } = await turnOf(caller, created.body.id, text, { traceparent: `00-${traceId}-${clientSpanId}-01`, tracestate: 'client=1' }, env.apiUrl2);
      return { caller, agentId, model, sessionId: created.body.id, turnId, inputId: receipt.input_id, traceId, clientSpanId, endpointId: endpoint.body.id, text };
    })());

  /** The spans of the traced turn, once every expected one arrived. */
  async function spansOf(t: Traced): Promise<{ all: ReceivedSpan[]; server: ReceivedSpan; accept: ReceivedSpan; claim: ReceivedSpan; invoke: ReceivedSpan; chats: ReceivedSpan[]; tool: ReceivedSpan }> {
    const inTrace = (name: string) => (s: ReceivedSpan) => s.traceId === t.traceId && (s.name === name || s.name.startsWith(`${name} `));
    const [server] = await receiver.waitForSpans((s) => s.traceId === t.traceId && s.kind === OTLP_KIND.SERVER, { what: 'api request spans' });
    const [accept] = await receiver.waitForSpans(inTrace('accept_input'), { what: 'accept_input spans' });
    const [claim] = await receiver.waitForSpans(inTrace('claim'), { what: 'claim spans' });
    const [invoke] = await receiver.waitForSpans(inTrace('invoke_agent'), { what: 'invoke_agent spans' });
    const chats = await receiver.waitForSpans(inTrace('chat'), { count: 2, what: 'chat spans' });
    const [tool] = await receiver.waitForSpans(inTrace('execute_tool'), { what: 'execute_tool spans' });
    chats.sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
    return { all: receiver.trace(t.traceId), server: server!, accept: accept!, claim: claim!, invoke: invoke!, chats, tool: tool! };
  }

  it("continues the client's traceparent: api request span (api-2, OTLP/JSON), accept_input, claim, invoke_agent, chat and execute_tool (worker, protobuf), chained", { timeout: 120_000 }, async () => {
    const t = await tracedTurn();
    const { server, accept, claim, invoke, chats, tool, all } = await spansOf(t);

    assert.equal(server.serviceName, 'yuxi-api-2');
    assert.equal(server.protocol, 'json', 'api-2 exports OTLP/JSON');
    assert.equal(server.parentSpanId, t.clientSpanId, "the request span is the client's span's child");
    assert.equal(server.attributes['http.request.method'], 'POST');
    assert.match(String(server.attributes['http.route']), /sessions\/.+\/events$/);
    assert.equal(server.name, `POST ${server.attributes['http.route']}`);
    assert.equal(server.attributes['url.path'], `${API}/sessions/${t.sessionId}/events`);
    assert.equal(server.attributes['http.response.status_code'], 202);
    assert.equal(server.attributes['yuxi.session_id'], t.sessionId);

    assert.equal(accept.parentSpanId, server.spanId, 'accept_input is a child of the request span');
    assert.equal(accept.attributes['yuxi.session_id'], t.sessionId);
    assert.equal(accept.attributes['yuxi.input_id'], t.inputId);
    assert.equal(typeof accept.attributes['yuxi.input.mode'], 'string');

    assert.equal(invoke.serviceName, 'yuxi-worker');
    assert.equal(invoke.protocol, 'protobuf', 'the worker exports OTLP protobuf');
    assert.equal(invoke.kind, OTLP_KIND.INTERNAL);
    assert.equal(invoke.parentSpanId, accept.spanId, "the run's span is a child of the stored context: accept_input");
    assert.equal(claim.parentSpanId, accept.spanId, 'claim has the same parent');
    const runId = String(invoke.attributes['yuxi.run_id']);
    assert.equal(invoke.spanId, runSpanIdOf(runId), 'a fresh claim takes the span id derived from the run id');
    assert.ok([invoke.attributes['gen_ai.agent.name'], t.agentId].some((agent) => invoke.name === `invoke_agent ${agent}`), invoke.name);
    assert.deepEqual(
      [invoke.attributes['gen_ai.operation.name'], invoke.attributes['gen_ai.agent.id'], invoke.attributes['yuxi.session_id'], invoke.attributes['yuxi.turn_id']],
      ['invoke_agent', t.agentId, t.sessionId, t.turnId],
    );
    assert.equal(typeof invoke.attributes['gen_ai.request.model'], 'string');
    assert.equal(typeof invoke.attributes['yuxi.run.epoch'], 'number');

    assert.equal(chats.length, 2, 'one chat span per model call');
    for (const chat of chats) {
      assert.equal(chat.parentSpanId, invoke.spanId, 'chat spans are children of invoke_agent');
      assert.equal(chat.kind, OTLP_KIND.CLIENT);
      assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
      assert.equal(chat.attributes['gen_ai.provider.name'], 'openai');
      assert.ok(String(chat.attributes['gen_ai.request.model']).endsWith(fakeModel(t.model)), JSON.stringify(chat.attributes));
      assert.equal(chat.attributes['gen_ai.response.model'], fakeModel(t.model));
      assert.equal(chat.name, `chat ${chat.attributes['gen_ai.request.model']}`);
      assert.ok(Number(chat.attributes['gen_ai.usage.input_tokens']) > 0, 'input tokens');
      assert.ok(Number(chat.attributes['gen_ai.usage.output_tokens']) > 0, 'output tokens');
    }
    assert.deepEqual(chats.map((c) => c.attributes['gen_ai.response.finish_reasons']), [['tool_calls'], ['stop']]);

    assert.equal(tool.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.match(String(tool.attributes['gen_ai.tool.name']), /add/);
    assert.equal(tool.attributes['gen_ai.tool.call.id'], 'c1');
    assert.ok(descendsFrom(tool, invoke.spanId, all), 'execute_tool belongs to the run');

    // The MCP server's request carried the trace.
    const mcpCall = mcp.calls.find((c) => c.tool === 'add' && c.metaKey === `${t.turnId}:c1`);
    assert.ok(mcpCall, 'the MCP server was called');
    assert.equal(traceIdOfHeader(mcpCall.traceparent), t.traceId, `the MCP request's traceparent: ${mcpCall.traceparent}`);

    // No content: not the attributes that carry it, nor the message's text anywhere.
    for (const span of all) {
      for (const name of CONTENT_ATTRIBUTES) assert.equal(span.attributes[name], undefined, `${span.name} has no ${name}`);
      assert.ok(!JSON.stringify(span.attributes).includes(t.text.slice(-36)), `${span.name} does not carry the message`);
    }
    assert.deepEqual(receiver.errors, [], 'every export was decodable');
  });

  it('delivers the turn’s webhook in the same trace: one webhook.deliver CLIENT span per attempt, its traceparent on the request', { timeout: 120_000 }, async () => {
    const t = await tracedTurn();
    await hooks.waitFor('the turn.completed delivery', () => hooks.at('/traces').some((h) => h.json?.type === 'agent.session.turn.completed' && h.json?.data?.turn_id === t.turnId), 30_000);
    const hook = hooks.at('/traces').find((h) => h.json?.type === 'agent.session.turn.completed' && h.json?.data?.turn_id === t.turnId)!;
    assert.equal(traceIdOfHeader(hook.headers.traceparent), t.traceId, `the delivery's traceparent: ${hook.headers.traceparent}`);
    const [deliver] = await receiver.waitForSpans((s) => s.traceId === t.traceId && s.name === 'webhook.deliver' && s.attributes['yuxi.webhook.event_type'] === 'agent.session.turn.completed', { what: 'webhook.deliver spans' });
    assert.equal(deliver!.kind, OTLP_KIND.CLIENT);
    assert.equal(deliver!.spanId, parentIdOfHeader(hook.headers.traceparent), 'the request carries the attempt span as its parent');
    assert.equal(deliver!.attributes['yuxi.webhook.endpoint_id'], t.endpointId);
    assert.equal(deliver!.attributes['yuxi.webhook.attempt'], 1);
    assert.equal(deliver!.attributes['yuxi.session_id'], t.sessionId);
    assert.equal(deliver!.attributes['yuxi.turn_id'], t.turnId, 'a turn\'s event: the attempt is the turn\'s span (in its trace entry)');
    assert.equal(deliver!.attributes['http.request.method'], 'POST');
    assert.equal(deliver!.attributes['http.response.status_code'], 200);
    // The endpoint's origin only: a path (Slack, Discord) or a query may hold a secret.
    assert.equal(deliver!.attributes['url.full'], new URL(hooks.url).origin);
  });

  it('shows yuxi.trace_id on the turn and its run, and in the api and worker log lines', { timeout: 120_000 }, async () => {
    const t = await tracedTurn();
    const turn = await call(t.caller, `${API}/sessions/${t.sessionId}/turns/${t.turnId}`);
    assert.equal(turn.status, 200, turn.text);
    assert.equal(turn.body.yuxi.trace_id, t.traceId);
    const runId: string = turn.body.yuxi.result_run_id;
    const run = await call(t.caller, `${API}/sessions/${t.sessionId}/runs/${runId}`);
    assert.equal(run.status, 200, run.text);
    assert.equal(run.body.yuxi?.trace_id, t.traceId, `the run view: ${run.text}`);
    // The message went through api-2: its lines of that request carry the trace, as do the worker's of the run.
    assert.ok((await logLinesOf('api-2', t.traceId)).length > 0, 'an api-2.log line has trace_id');
    const workerLines = await logLinesOf('worker', t.traceId);
    assert.ok(workerLines.length > 0, 'a worker.log line has trace_id');
    assert.ok(workerLines.every((line) => typeof line.span_id === 'string' && /^[0-9a-f]{16}$/.test(line.span_id)), 'with the span_id');
  });

  it('GET /sessions/{id}/traces returns the turn’s trace as OTLP JSON to its owner (the official openai SDK reads it), 404 to anyone else', { timeout: 120_000 }, async () => {
    const t = await tracedTurn();
    const { invoke } = await spansOf(t);
    let entry: any;
    for (let attempt = 0; attempt < 100 && !entry; attempt += 1) {
      const res = await call(t.caller, `${API}/sessions/${t.sessionId}/traces`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.object, 'list');
      assert.equal(typeof res.body.has_more, 'boolean');
      const found = res.body.data.find((e: any) => e.id === t.turnId);
      // Spans are stored in batches: poll until those of the worker's run and the api's request are there.
      const spans = found ? decodeJsonRequest(found.otlp) : [];
      if (spans.some((s) => s.name.startsWith('chat') && s.traceId === t.traceId) && spans.some((s) => s.kind === OTLP_KIND.SERVER)) entry = found;
      else await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(entry, 'the turn’s trace is listed with its spans');
    assert.equal(entry.object, 'agent.session.trace');
    assert.equal(entry.session_id, t.sessionId);
    assert.equal(typeof entry.created_at, 'number');
    const stored = decodeJsonRequest(entry.otlp);
    assert.ok(stored.every((s) => s.traceId === t.traceId), 'one trace per entry');
    const storedInvoke = stored.find((s) => s.spanId === invoke.spanId);
    assert.ok(storedInvoke, 'the exported invoke_agent is stored, same span id');
    assert.equal(storedInvoke.serviceName, 'yuxi-worker');
    for (const name of ['accept_input', 'invoke_agent', 'chat', 'execute_tool']) assert.ok(stored.some((s) => s.name === name || s.name.startsWith(`${name} `)), `${name} is stored`);
    // The spans of no turn in the entry are the input's acceptance and the request that sent it (its parent).
    const storedAccept = stored.find((s) => s.name === 'accept_input');
    assert.equal(storedAccept?.attributes['yuxi.input_id'], t.inputId, 'the acceptance of the turn\'s input');
    const requests = stored.filter((s) => s.kind === OTLP_KIND.SERVER);
    assert.deepEqual(requests.map((s) => s.spanId), [storedAccept!.parentSpanId], 'the request span is the one that sent the input');

    const client = new OpenAI({ apiKey: t.caller.token, baseURL: `${env.apiUrl}/api/v1`, maxRetries: 0 });
    const page = await client.beta.agents.sessions.traces.list(t.sessionId);
    const read = page.data.find((e) => e.id === t.turnId);
    assert.ok(read, 'the SDK lists the turn’s trace');
    assert.equal(read.object, 'agent.session.trace');
    assert.ok(decodeJsonRequest(read.otlp).some((s) => s.spanId === invoke.spanId), 'its otlp holds the spans');

    const { caller: stranger } = await newProductUser('traces stranger');
    const refused = await call(stranger, `${API}/sessions/${t.sessionId}/traces`);
    assert.equal(refused.status, 404, refused.text);
    assert.equal((await call(t.caller, `${API}/sessions/${randomUUID()}/traces`)).status, 404);
    // Bad paging input is a clear 4xx with its code, never a 500: a cursor that is no turn of this session, limits and orders out of range.
    const foreign = await call(t.caller, `${API}/sessions/${t.sessionId}/traces?after=${randomUUID()}`);
    assert.equal(foreign.status, 400, foreign.text);
    assert.equal(foreign.body.error.code, 'invalid_cursor');
    assert.equal((await call(t.caller, `${API}/sessions/${t.sessionId}/traces?after=not-a-turn`)).body.error.code, 'invalid_cursor');
    for (const query of ['limit=0', 'limit=101', 'order=sideways']) {
      const bad = await call(t.caller, `${API}/sessions/${t.sessionId}/traces?${query}`);
      assert.equal(bad.status, 422, `${query}: ${bad.text}`);
      assert.equal(bad.body.error.code, 'validation_failed', query);
    }
  });

  it('starts a new root trace for a message without traceparent, and for an invalid one (never a 4xx); bounds a long tracestate', { timeout: 120_000 }, async () => {
    const { caller } = await newProductUser('traces roots');
    const zeros = `00-${'0'.repeat(32)}-${'0'.repeat(16)}-01`;
    const valid = `00-${randomHex(16)}-${randomHex(8)}-01`;
    const cases: { why: string; headers: Record<string, string>; continues?: string }[] = [
      { why: 'no traceparent', headers: {} },
      { why: 'garbage', headers: { traceparent: 'not-a-traceparent' } },
      { why: 'all-zero ids', headers: { traceparent: zeros } },
      { why: 'a tracestate over 512 characters', headers: { traceparent: valid, tracestate: `k=${'v'.repeat(600)}` }, continues: valid.slice(3, 35) },
    ];
    for (const c of cases) {
      const created = await call(caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot' }, idempotencyKey: newKey('create') });
      assert.equal(created.status, 201, created.text);
      const { turnId } = await turnOf(caller, created.body.id, `hello ${c.why}`, c.headers);
      const [server] = await receiver.waitForSpans((s) => s.kind === OTLP_KIND.SERVER && s.attributes['url.path'] === `${API}/sessions/${created.body.id}/events`, { what: `request spans (${c.why})` });
      if (c.continues) {
        assert.equal(server!.traceId, c.continues, `${c.why}: the trace continues`);
      } else {
        assert.equal(server!.parentSpanId, undefined, `${c.why}: a root span`);
        assert.match(server!.traceId, /^(?!0{32})[0-9a-f]{32}$/);
      }
      const [invoke] = await receiver.waitForSpans((s) => s.name.startsWith('invoke_agent') && s.attributes['yuxi.turn_id'] === turnId, { what: `invoke_agent (${c.why})` });
      assert.equal(invoke!.traceId, server!.traceId, `${c.why}: the run is in the request's trace`);
      const turn = await call(caller, `${API}/sessions/${created.body.id}/turns/${turnId}`);
      assert.equal(turn.body.yuxi.trace_id, server!.traceId, `${c.why}: the turn names its trace`);
      if (c.continues) {
        // The over-long tracestate costs the client nothing but itself: the turn joins the client's
        // trace, and no span kept for the session carries a tracestate past the W3C bound.
        assert.equal(turn.body.yuxi.trace_id, c.continues, `${c.why}: the turn is in the client's trace`);
        const stored = await storedSpans(caller, created.body.id, turnId);
        assert.ok(stored.some((s) => s.name === 'accept_input'), `${c.why}: the acceptance's span is stored`);
        for (const span of stored) assert.ok((span.traceState ?? '').length <= 512, `${c.why}: ${span.name} keeps a bounded tracestate`);
      }
    }
  });
});
