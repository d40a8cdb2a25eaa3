import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fakeModel, putAgent, createSessionWith } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { type FakeSearch, startFakeSearch } from '../support/fake-search.js';
import { API, http } from '../support/http.js';
import { ADMIN, call, newProductUser } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

// The web_search builtin end to end: the worker searches the stack's provider (a fake SearXNG on
// loopback, admitted by WEB_SEARCH_ALLOWED_HOSTS; WEB_SEARCH_TIMEOUT_MS=1500, WEB_SEARCH_MAX_RESULTS=3
// in scripts/test.mjs) and the model gets the results, or the provider's failure, as a tool output.
describe('web search', () => {
  let fake: FakeOpenAi;
  let search: FakeSearch;
  const streams: SseStream[] = [];
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    // Slower than WEB_SEARCH_TIMEOUT_MS: a `slow` query times out.
    search = await startFakeSearch(env.fakeSearchPort, { slowMs: 4_000 });
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
    await search.close();
  });

  const items = async (sessionId: string, turnId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data;

  /** One turn whose model calls web_search with `args`, then answers; the call's output item. */
  async function searchTurn(args: object): Promise<{ output: any; model: string; turn: any }> {
    const { id, model } = await putAgent({ tools: [{ type: 'builtin', name: 'web_search' }] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'ws_1', name: 'web_search', arguments: JSON.stringify(args) }] }, { text: 'done' }]);
    const session = await createSessionWith(id, 'look it up');
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const created = await stream.waitForType('agent.session.turn.created');
    const finished = await stream.waitFor((e) => ['agent.session.turn.completed', 'agent.session.turn.failed'].includes(e.type) && e.data.turn_id === created.data.turn_id);
    assert.equal(finished.type, 'agent.session.turn.completed', 'a search, whatever its provider answers, never fails the turn');
    const output = (await items(session.id, created.data.turn_id)).find((i) => i.type === 'function_call_output' && i.call_id === 'ws_1');
    return { output, model, turn: finished.data.turn };
  }

  it('searches through the deployment\'s SearXNG and gives the model numbered results to cite', async () => {
    const before = search.requests.length;
    const { output, model } = await searchTurn({ query: 'yuxi agents' });
    assert.equal(output.yuxi.success, true);
    const body = JSON.parse(output.output);
    assert.equal(body.query, 'yuxi agents');
    assert.deepEqual(body.results, [
      { n: 1, title: 'First yuxi agents result', url: 'https://one.example/a?x=1', snippet: 'About yuxi agents & more' },
      { n: 2, title: 'Second result', url: 'https://two.example/b', snippet: 'Second snippet' },
      { n: 3, title: 'Third result', url: 'https://three.example/c', snippet: 'Third snippet' },
    ]);
    assert.match(body.note, /\[n\]\(url\)/);
    const sent = search.requests.slice(before);
    assert.equal(sent.length, 1);
    assert.equal(sent[0].path, '/search');
    assert.deepEqual(sent[0].params, { q: 'yuxi agents', format: 'json' });
    // The model was offered the tool, its count bounded by the deployment, and read the results on its next call.
    const [first, second] = fake.requests(fakeModel(model)) as any[];
    const offered = first.tools.find((t: any) => t.function.name === 'web_search');
    assert.equal(offered.function.parameters.properties.count.maximum, 3);
    const toolMessage = second.messages.find((m: any) => m.role === 'tool' && m.tool_call_id === 'ws_1');
    assert.equal(toolMessage.content, output.output);
  });

  it('a provider error and a provider timeout are error outputs for the model, and the turn completes', async () => {
    const failed = await searchTurn({ query: 'http-500 please' });
    assert.equal(failed.output.yuxi.success, false);
    assert.equal(failed.output.output, 'web_search error: the search provider answered HTTP 500; try again later');
    const slow = await searchTurn({ query: 'slow one' });
    assert.equal(slow.output.yuxi.success, false);
    assert.equal(slow.output.output, 'web_search error: the search provider did not answer within 1.5 s; try again later');
  });

  it('is refused in a definition where the deployment configures no provider, accepted where it does', async () => {
    const { caller } = await newProductUser('web search owner');
    const definition = { name: 'searcher', visibility: 'private', model: 'scripted:echo', tools: [{ type: 'builtin', name: 'web_search' }] };
    const agentId = `ws-${Date.now().toString(36)}`;
    // The file-limits replica runs without WEB_SEARCH_PROVIDER.
    const refused = await call(caller, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: definition, baseUrl: env.apiUrlFileLimits });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.error.code, 'invalid_agent');
    assert.deepEqual(refused.body.error.details.fields, [{ field: 'tools[0].name', errors: ['web_search is not available: this deployment has no search provider (WEB_SEARCH_PROVIDER)'] }]);
    const accepted = await call(caller, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: definition });
    assert.equal(accepted.status, 201, accepted.text);
    assert.deepEqual(accepted.body.yuxi.tools, [{ type: 'builtin', name: 'web_search' }]);
  });

  it('a subagent inherits web_search from its coordinator\'s agent and runs it in the worker', async () => {
    const { id, model } = await putAgent({ tools: [{ type: 'builtin', name: 'web_search' }], multi_agent: { enabled: true } });
    // One model for the tree (the member is created with the coordinator's agent); the wait makes the order certain.
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 'spawn', name: 'create_subagent', arguments: JSON.stringify({ task: 'search for members', name: 'finder' }) }, { id: 'wait', name: 'wait_subagents', arguments: '{}' }] },
      { tool_calls: [{ id: 'member_ws', name: 'web_search', arguments: JSON.stringify({ query: 'member query', count: 1 }) }] },
      { text: 'found it' },
      { text: 'all done' },
    ]);
    const before = search.requests.length;
    const session = await createSessionWith(id, 'delegate the search');
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const finished = await stream.waitFor((e) => ['agent.session.turn.completed', 'agent.session.turn.failed'].includes(e.type), 30_000);
    assert.equal(finished.type, 'agent.session.turn.completed', JSON.stringify(finished.data.turn?.error));
    const members = (await http(`${API}/sessions?root_session_id=${session.id}&order=asc`)).body.data.filter((s: any) => s.id !== session.id);
    assert.equal(members.length, 1);
    const memberItems = (await http(`${API}/sessions/${members[0].id}/items?order=asc&limit=100`)).body.data as any[];
    const output = memberItems.find((i) => i.type === 'function_call_output' && i.call_id === 'member_ws');
    assert.equal(output.yuxi.success, true, output.output);
    assert.deepEqual(JSON.parse(output.output).results, [{ n: 1, title: 'First member query result', url: 'https://one.example/a?x=1', snippet: 'About member query & more' }]);
    assert.deepEqual(search.requests.slice(before).map((r) => r.params.q), ['member query']);
  });

  it('is documented in the agent tool schema of the OpenAPI document', async () => {
    const spec = (await http('/openapi.json', { key: null })).body;
    const name = spec.components.schemas.BuiltinToolDto.properties.name;
    assert.ok(name.enum.includes('web_search'));
    assert.match(name.description, /`web_search` \(`\{"query", "count"\?\}`\)/);
    assert.match(name.description, /WEB_SEARCH_PROVIDER/);
  });
});
