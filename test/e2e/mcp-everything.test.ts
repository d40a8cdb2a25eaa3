import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type EverythingServer, startEverythingServer } from '../support/everything-server.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http, postEvent } from '../support/http.js';
import { until } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

/**
 * The worker's MCP client against the MCP project's own reference server
 * (`@modelcontextprotocol/server-everything`, Streamable HTTP, stateful sessions), not only
 * against a server we wrote: what a third-party server sees is counted by the harness's proxy.
 */
describe('MCP client against server-everything', () => {
  let fake: FakeOpenAi;
  let server: EverythingServer;
  const streams: SseStream[] = [];
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    server = await startEverythingServer();
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
    await server.close();
  });

  const everything = (extra: object = {}): object => ({ type: 'mcp', server_label: 'everything', server_url: server.url, ...extra });
  const outputs = async (sessionId: string, turnId: string): Promise<any[]> => {
    const items = (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data as any[];
    return items.filter((i) => i.type === 'function_call_output');
  };
  async function open(sessionId: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    return stream;
  }
  async function turn(agentId: string, input: string): Promise<{ sessionId: string; turnId: string; stream: SseStream }> {
    const session = await createSessionWith(agentId, input);
    const stream = await open(session.id);
    const created = await stream.waitForType('agent.session.turn.created');
    await stream.waitForType('agent.session.turn.completed', created.data.turn_id, 30_000);
    return { sessionId: session.id, turnId: created.data.turn_id, stream };
  }

  it('calls echo and get-sum on the reference server; their outputs reach the model', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['echo', 'get-sum'] })] });
    fake.script(fakeModel(model), [
      {
        tool_calls: [
          { id: 'c_echo', name: 'echo', arguments: '{"message":"hello there"}' },
          { id: 'c_sum', name: 'get-sum', arguments: '{"a":2,"b":40}' },
        ],
      },
      { text: 'done' },
    ]);
    const { sessionId, turnId } = await turn(id, 'go');
    const results = await outputs(sessionId, turnId);
    assert.equal(results.length, 2);
    assert.match(results.find((r) => r.call_id === 'c_echo').output, /hello there/);
    assert.match(results.find((r) => r.call_id === 'c_sum').output, /42/);
    const second = fake.requests(fakeModel(model))[1] as any;
    const toolMessages = second.messages.filter((m: any) => m.role === 'tool').map((m: any) => m.content);
    assert.ok(toolMessages.some((c: string) => c.includes('42')), JSON.stringify(toolMessages));
    assert.ok(server.count('tools/call') >= 2);
  });

  const LONG = 'trigger-long-running-operation';

  it('streams the progress of a long-running operation as live tool_progress events, before its output', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: [LONG] })] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c_long', name: LONG, arguments: '{"duration":2,"steps":4}' }] }, { text: 'done' }]);
    const { sessionId, turnId, stream } = await turn(id, 'go');
    const progress = stream.events.filter((e) => e.type === 'yuxi.session.turn.tool_progress');
    // One report every 500 ms, under the 4 per second a call may send: none is dropped.
    assert.deepEqual(progress.map((e) => e.data.progress), [1, 2, 3, 4], JSON.stringify(progress.map((e) => e.data)));
    for (const { data } of progress) {
      assert.equal(data.call_id, 'c_long');
      assert.equal(data.turn_id, turnId);
      assert.equal(data.total, 4);
      assert.equal(data.message, null);
      assert.equal(data.yuxi.seq, undefined, 'live: no seq');
      assert.equal(typeof data.yuxi.run_id, 'string');
    }
    const outputAt = stream.events.findIndex((e) => e.type === 'agent.session.turn.item.added' && e.data.item.type === 'function_call_output' && e.data.item.call_id === 'c_long');
    assert.ok(outputAt > stream.events.indexOf(progress.at(-1)!), 'every progress event comes before the call\'s output item');
    const [result] = await outputs(sessionId, turnId);
    assert.match(result.output, /Long running operation completed/);
  });

  it('a turn cancelled during a long-running operation sends notifications/cancelled for that call, and ends cancelled', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: [LONG] })] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c_slow', name: LONG, arguments: '{"duration":30,"steps":30}' }] }, { text: 'never asked' }]);
    const session = await createSessionWith(id, 'go');
    const stream = await open(session.id);
    // The call is in flight on the server once it reports progress.
    const first = await stream.waitFor((e) => e.type === 'yuxi.session.turn.tool_progress' && e.data.call_id === 'c_slow', 15_000);
    const call = server.messages.find((m) => m.method === 'tools/call' && (m.params?._meta as any)?.idempotency_key === `${first.data.turn_id}:c_slow`);
    assert.ok(call, 'the harness saw the tools/call');
    assert.equal((await postEvent(session.id, { type: 'agent.session.input.cancel' })).status, 202);
    const cancelled = await stream.waitForType('agent.session.turn.cancelled', first.data.turn_id, 15_000);
    assert.equal(cancelled.data.turn.status, 'cancelled');
    const notice = await until(async () => server.messages.find((m) => m.method === 'notifications/cancelled' && m.sessionId === call.sessionId && m.params?.requestId === call.id), { attempts: 50, intervalMs: 100 });
    assert.ok(notice, `notifications/cancelled for request ${String(call.id)}; the client sent: ${server.messages.map((m) => m.method ?? 'response').join(', ')}`);
    assert.equal(fake.requests(fakeModel(model)).length, 1, 'the model was not called again');
  });
});
