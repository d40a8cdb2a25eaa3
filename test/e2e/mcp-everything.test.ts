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

  it('get-tiny-image: the image is a session file in the workdir, and reaches the model as an image part', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['get-tiny-image'] }), { type: 'builtin', name: 'list_files' }] });
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 'c_img', name: 'get-tiny-image', arguments: '{}' }] },
      { tool_calls: [{ id: 'c_ls', name: 'list_files', arguments: '{}' }] },
      { text: 'a logo' },
    ]);
    const { sessionId, turnId } = await turn(id, 'show me the logo');
    const results = await outputs(sessionId, turnId);
    const image = results.find((r) => r.call_id === 'c_img');
    assert.equal(image.yuxi.success, true);
    assert.match(image.output, /\[image 1: image\/png\]/);
    assert.match(image.output, /MCP logo/);
    assert.equal(image.yuxi.file_ids?.length, 1, JSON.stringify(image));
    const fileId = image.yuxi.file_ids[0] as string;

    // The bytes the server sent, downloadable through the session's files API.
    const download = await fetch(`${env.apiUrl}${API}/sessions/${sessionId}/files/${fileId}/content`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    assert.equal(download.status, 200);
    assert.equal(download.headers.get('content-type'), 'image/png');
    const bytes = Buffer.from(await download.arrayBuffer());
    assert.ok(bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])), 'PNG signature');

    // In the workdir: the file tools list it.
    assert.match(results.find((r) => r.call_id === 'c_ls').output, new RegExp(fileId));
    // Not an attachment: no input attached it.
    const attachments = await http(`${API}/sessions/${sessionId}/attachments`);
    assert.equal(attachments.status, 200);
    assert.equal(attachments.body.data.length, 0);

    // The second model request: the tool message is text, then one user message with the image.
    const second = fake.requests(fakeModel(model))[1] as any;
    const toolAt = second.messages.findIndex((m: any) => m.role === 'tool');
    assert.equal(typeof second.messages[toolAt].content, 'string');
    const shown = second.messages[toolAt + 1];
    assert.equal(shown.role, 'user');
    assert.deepEqual(shown.content[0], { type: 'text', text: '[Images returned by tool get-tiny-image (call c_img)]' });
    assert.equal(shown.content[1].type, 'image_url');
    assert.equal(shown.content[1].image_url.url, `data:image/png;base64,${bytes.toString('base64')}`);
    // The third request still shows it (it is part of the history now).
    const third = fake.requests(fakeModel(model))[2] as any;
    assert.ok(third.messages.some((m: any) => m.role === 'user' && Array.isArray(m.content) && m.content.some((p: any) => p.type === 'image_url')));
  });

  it('get-resource-links: the output lists each link with its URI', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['get-resource-links'] })] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c_links', name: 'get-resource-links', arguments: '{"count":2}' }] }, { text: 'done' }]);
    const { sessionId, turnId } = await turn(id, 'links please');
    const [links] = await outputs(sessionId, turnId);
    const lines = (links.output as string).split('\n').filter((line) => line.startsWith('[resource_link '));
    assert.equal(lines.length, 2, links.output);
    assert.match(lines[0]!, /^\[resource_link demo:\/\/resource\/dynamic\/blob\/1 \([\w/.+-]+\) Blob Resource 1\]$/);
    assert.match(lines[1]!, /^\[resource_link demo:\/\/resource\/dynamic\/text\/2 \([\w/.+-]+\) Text Resource 2\]$/);
    assert.equal(links.yuxi.file_ids, undefined);
  });

  it('get-structured-content: the output holds the structured result once', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['get-structured-content'] })] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c_weather', name: 'get-structured-content', arguments: '{"location":"New York"}' }] }, { text: 'done' }]);
    const { sessionId, turnId } = await turn(id, 'weather');
    const [weather] = await outputs(sessionId, turnId);
    assert.equal(weather.yuxi.success, true);
    const expected = { temperature: 33, conditions: 'Cloudy', humidity: 82 };
    assert.deepEqual(JSON.parse(weather.output), expected);
  });
});
