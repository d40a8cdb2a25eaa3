import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type EverythingServer, startEverythingServer } from '../support/everything-server.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http } from '../support/http.js';
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
  async function turn(agentId: string, input: string): Promise<{ sessionId: string; turnId: string; stream: SseStream }> {
    const session = await createSessionWith(agentId, input);
    const stream = await SseStream.open(session.id);
    streams.push(stream);
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
});
