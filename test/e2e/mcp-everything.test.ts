import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type EverythingServer, startEverythingServer } from '../support/everything-server.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http, sendMessage } from '../support/http.js';
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

  it('reuses one MCP session for every call of two turns (one initialize), and initialises once more after the server restarts', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['echo', 'get-sum'] })] });
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 'r1', name: 'echo', arguments: '{"message":"one"}' }] },
      { tool_calls: [{ id: 'r2', name: 'get-sum', arguments: '{"a":1,"b":2}' }] },
      { text: 'first done' },
      { tool_calls: [{ id: 'r3', name: 'echo', arguments: '{"message":"three"}' }] },
      { text: 'second done' },
      { tool_calls: [{ id: 'r4', name: 'echo', arguments: '{"message":"after restart"}' }] },
      { text: 'third done' },
    ]);
    // The worker may still hold a session from the test before: count from here.
    const initializeBefore = server.count('initialize');
    const callsBefore = server.count('tools/call');
    const first = await turn(id, 'first');
    const session = first.sessionId;
    assert.match((await outputs(session, first.turnId)).map((o) => o.output).join('\n'), /one[\s\S]*3/);
    const followUp = await sendMessage(session, 'again');
    assert.ok(followUp.status < 300, followUp.text);
    const secondTurn = await first.stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== first.turnId, 30_000);
    assert.match((await outputs(session, secondTurn.data.turn_id)).map((o) => o.output).join(''), /three/);
    assert.equal(server.count('tools/call') - callsBefore, 3, 'three calls reached the server');
    assert.ok(server.count('initialize') - initializeBefore <= 1, `at most one initialize for three calls, saw ${server.count('initialize') - initializeBefore}`);
    const sessionsUsed = new Set(server.messages.filter((m) => m.method === 'tools/call').slice(-3).map((m) => m.sessionId));
    assert.equal(sessionsUsed.size, 1, 'the three calls rode one MCP session');

    // The server restarts: every session it knew is gone. The next call initialises once and succeeds.
    await server.restart();
    const initializeBeforeRestart = server.count('initialize');
    const again = await sendMessage(session, 'after restart');
    assert.ok(again.status < 300, again.text);
    const thirdTurn = await first.stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== first.turnId && e.data.turn_id !== secondTurn.data.turn_id, 30_000);
    const third = await outputs(session, thirdTurn.data.turn_id);
    assert.equal(third.length, 1);
    assert.match(third[0].output, /after restart/);
    assert.equal(server.count('initialize') - initializeBeforeRestart, 1, 'one new session after the restart');
    const callsAfter = server.messages.filter((m) => m.method === 'tools/call' && (m.params as any)?.arguments?.message === 'after restart');
    assert.ok(callsAfter.length >= 1);
    assert.notEqual(callsAfter.at(-1)?.sessionId, [...sessionsUsed][0], 'the call after the restart rode the new session');
  });

  it('answers the server\'s sampling request with the session\'s model, and counts its tokens in the turn\'s usage', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['trigger-sampling-request'] })] });
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 's1', name: 'trigger-sampling-request', arguments: '{"prompt":"write a haiku","maxTokens":50}' }], usage: { prompt_tokens: 10, completion_tokens: 1 } },
      { text: 'Autumn moon rises', usage: { prompt_tokens: 7, completion_tokens: 3 } },
      { text: 'The server got its haiku.', usage: { prompt_tokens: 20, completion_tokens: 5 } },
    ]);
    const { sessionId, turnId, stream } = await turn(id, 'sample please');
    const [result] = await outputs(sessionId, turnId);
    assert.match(result.output, /Autumn moon rises/);
    const requests = fake.requests(fakeModel(model)) as any[];
    assert.equal(requests.length, 3);
    const sampling = requests[1];
    assert.equal(sampling.tools, undefined, 'a sampling call offers no tools');
    assert.equal(sampling.messages[0].role, 'system');
    assert.match(JSON.stringify(sampling.messages.at(-1)), /write a haiku/);
    const done = stream.events.find((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id === turnId);
    assert.deepEqual(done?.data.turn.yuxi.usage, { input_tokens: 37, output_tokens: 9, cached_tokens: 0, total_tokens: 46 });
  });
});
