import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http, postEvent, sendMessage } from '../support/http.js';
import { type SseEvent, SseStream } from '../support/sse.js';

/** What the model is told (UNAVAILABLE_TOOLS_NOTE in libs/runtime): it names nothing either. */
const NOTE = 'some of the tools you would normally have are unavailable for this turn';
const MESSAGE = 'Some tools are unavailable for this turn; it continues without them.';
/** How long a step may take on a loaded machine: a bound on waiting, never an assertion on speed. */
const WAIT_MS = 60_000;

/** A port on 127.0.0.1 that was just open and is closed now: connecting to it is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  return port;
}

// An agent whose MCP server is down still runs: its turns go on with the other tools, the model is
// told that some are missing, and clients get one generic capability_limited event per turn.
describe('capability_limited: a tool source that is down', () => {
  let fake: FakeOpenAi;
  let downUrl: string;
  const streams: SseStream[] = [];
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    downUrl = `http://127.0.0.1:${await closedPort()}/mcp`;
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
  });

  const limited = (stream: SseStream, turnId: string): SseEvent[] => stream.events.filter((e) => e.type === 'yuxi.session.turn.capability_limited' && e.data.turn_id === turnId);
  const systemOf = (request: any): string => request.messages.find((m: any) => m.role === 'system')?.content ?? '';

  it('the turn completes with the other tools; one generic event per turn across its model calls and runs; the model reads the note', async () => {
    const { id, model } = await putAgent({
      instructions: 'Be brief.',
      tools: [
        { type: 'mcp', server_label: 'crm-internal', server_url: downUrl },
        { type: 'builtin', name: 'current_time' },
        { type: 'builtin', name: 'ask_user' },
      ],
    });
    fake.script(fakeModel(model), [
      // A builtin that answers at once (the calculator starts a thread of its own on first use).
      { tool_calls: [{ id: 'c1', name: 'current_time', arguments: '{"timezone":"UTC"}' }] },
      { tool_calls: [{ id: 'q1', name: 'ask_user', arguments: '{"question":"Go on?"}' }] },
      { text: 'Five.' },
      { text: 'Still here.' },
    ]);
    const session = await createSessionWith(id, 'what is 2+3?');
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const created = await stream.waitForType('agent.session.turn.created');
    const turnId = created.data.turn_id;

    // The second run of the turn (after the answer) plans its tools again and finds the server down again.
    const waiting = await stream.waitForType('yuxi.session.turn.waiting', turnId, WAIT_MS);
    const resume = await postEvent(session.id, {
      type: 'yuxi.session.input.resume',
      turn_id: turnId,
      waitpoint_id: waiting.data.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: 'q1', answer: 'yes' }] },
    });
    assert.equal(resume.status, 202);
    const done = await stream.waitForType('agent.session.turn.completed', turnId, WAIT_MS);
    assert.equal(done.data.turn.status, 'completed');

    const turn = (await http(`${API}/sessions/${session.id}/turns/${turnId}`)).body;
    assert.equal(turn.yuxi.runs.length, 2, 'the turn ran twice (before and after the answer)');
    const [event, ...more] = limited(stream, turnId);
    assert.ok(event, 'the stream carried capability_limited');
    assert.deepEqual(more, [], 'once per turn, whatever the number of model calls and runs');
    assert.equal(event.data.reason, 'tool_source_unavailable');
    assert.equal(event.data.message, MESSAGE);
    assert.equal(typeof event.data.yuxi.seq, 'number', 'durable: it has its place in the session sequence');
    const wire = JSON.stringify(event.data);
    for (const secret of ['crm-internal', '127.0.0.1', new URL(downUrl).port]) assert.ok(!wire.includes(secret), `the event names nothing of the resource (${secret})`);
    // Announced when the run planned its tools: before the model's first call item.
    const limitedAt = stream.events.indexOf(event);
    const firstCallAt = stream.events.findIndex((e) => e.type === 'agent.session.turn.item.added' && e.data.item.type === 'function_call');
    assert.ok(firstCallAt > limitedAt, `capability_limited (${limitedAt}) precedes the first function_call (${firstCallAt})`);

    const requests = fake.requests(fakeModel(model)) as any[];
    assert.equal(requests.length, 3);
    for (const request of requests) {
      assert.ok(systemOf(request).startsWith('Be brief.'), 'the agent\'s instructions come first');
      assert.ok(systemOf(request).includes(NOTE), 'every model call of the turn reads the note');
      assert.ok(!systemOf(request).includes('crm-internal'), 'the note names no source');
      assert.deepEqual(request.tools.map((t: any) => t.function.name).sort(), ['ask_user', 'current_time'], 'the other tools are offered');
    }
    const items = (await http(`${API}/sessions/${session.id}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
    assert.equal(items.find((i: any) => i.type === 'function_call_output' && i.call_id === 'c1')?.yuxi.success, true, 'the builtin tool ran');

    // A later turn of the session is limited too, and says so once for itself.
    assert.equal((await sendMessage(session.id, 'again')).status, 202);
    const next = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== turnId, WAIT_MS);
    assert.equal(limited(stream, next.data.turn_id).length, 1);
    assert.equal(limited(stream, turnId).length, 1);
  });

  it('an agent whose only tool source is down answers without tools', async () => {
    const { id, model } = await putAgent({ tools: [{ type: 'mcp', server_label: 'down', server_url: downUrl }] });
    fake.script(fakeModel(model), [{ text: 'No tools today.' }]);
    const session = await createSessionWith(id, 'hello');
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const done = await stream.waitForType('agent.session.turn.completed', undefined, WAIT_MS);
    assert.equal(limited(stream, done.data.turn_id).length, 1);
    const [request] = fake.requests(fakeModel(model)) as any[];
    assert.equal(systemOf(request).includes(NOTE), true, 'instructions-less agents get the note alone');
    assert.equal(request.tools, undefined, 'no tools are offered');
  });
});
