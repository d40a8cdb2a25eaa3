import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { EVENT_TYPES } from '#libs/events';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { startEverythingServer } from '../support/everything-server.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, createSession, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { OpenApiSchemas } from '../support/openapi-schema.js';
import { moveReplayWindow, NODE_FILLING_INPUT } from '../support/replay-window.js';
import { type SseEvent, SseStream } from '../support/sse.js';

/** Slow enough to act mid-turn: ten words, 80 ms apart. */
const SLOW = 'one two three four five six seven eight nine ten [[delay:80]]';

// Real sessions on the real stack: every event their streams carry must conform to its schema in
// the live /openapi.json (the member the SessionEvent discriminator maps its type to, and the union).
describe('SSE event payloads conform to the OpenAPI document', () => {
  let schemas: OpenApiSchemas;
  let mapping: Record<string, string>;
  let fake: FakeOpenAi;
  const streams: SseStream[] = [];
  const seen = new Map<string, number>();

  before(async () => {
    schemas = await OpenApiSchemas.live();
    mapping = schemas.document.components.schemas.SessionEvent.discriminator.mapping;
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
  });

  async function open(sessionId: string, lastEventId?: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId, { lastEventId });
    assert.equal(stream.status, 200, stream.bodyText);
    streams.push(stream);
    return stream;
  }

  /** Validates every event of the stream so far; returns them. */
  function conform(events: SseEvent[]): SseEvent[] {
    assert.ok(events.length > 0, 'the stream carried events');
    for (const event of events) {
      assert.equal(event.data.type, event.type, 'the SSE event: is the payload type');
      const ref = mapping[event.type];
      assert.ok(ref, `${event.type} is a member of SessionEvent`);
      const member = ref.replace('#/components/schemas/', '');
      const context = `${event.type}: ${JSON.stringify(event.data)}`;
      assert.deepEqual(schemas.problems(member, event.data), [], context);
      assert.deepEqual(schemas.problems('SessionEvent', event.data), [], `SessionEvent (exactly one member) ${context}`);
      seen.set(event.type, (seen.get(event.type) ?? 0) + 1);
    }
    return events;
  }

  it('a real session of every kind streams events that conform, and together they meet every event type', async (t) => {
    assert.deepEqual(Object.keys(mapping).sort(), Object.keys(EVENT_TYPES).sort(), 'SessionEvent has one member per event type');

    await t.test('a turn streamed to a stream=true create: created, accepted, run, turn, items, parts, deltas, done', async () => {
      const stream = await SseStream.request(`${API}/sessions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${env.apiKey}`, 'content-type': 'application/json', 'idempotency-key': newKey('create') },
        body: JSON.stringify({ agent_id: 'default-chatbot', input: 'hello schema world', stream: true }),
      });
      streams.push(stream);
      assert.equal(stream.status, 201, stream.bodyText);
      await stream.waitForType('agent.session.turn.completed');
      stream.close();
      const events = conform(stream.events);
      assert.equal(events[0]!.type, 'agent.session.created');
      assert.ok(events.some((e) => e.type === 'agent.session.turn.output_text.delta'));
    });

    await t.test('a cancelled turn: turn.state with cancellation_pending, run and turn cancelled, the incomplete item', async () => {
      const session = await createSession();
      const stream = await open(session.id);
      await sendMessage(session.id, SLOW);
      const created = await stream.waitForType('agent.session.turn.created');
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' two');
      assert.equal((await postEvent(session.id, { type: 'agent.session.input.cancel' })).status, 202);
      await stream.waitForType('agent.session.turn.cancelled', created.data.turn_id);
      conform(stream.events);
      assert.ok(stream.events.some((e) => e.type === 'yuxi.session.turn.state'));
    });

    await t.test('a server tool call, a question waitpoint answered, and a failed turn', async () => {
      const session = await createSession('[[tool:calculator {"expression":"2+3"}]] [[ask:Which colour?]]');
      const stream = await open(session.id);
      const waiting = await stream.waitForType('yuxi.session.turn.waiting');
      const { waitpoint } = waiting.data;
      const answer = {
        type: 'yuxi.session.input.resume',
        turn_id: waiting.data.turn_id,
        waitpoint_id: waitpoint.id,
        response: { type: 'answer', answers: waitpoint.questions.map((q: any) => ({ question_id: q.question_id, answer: 'blue' })) },
      };
      assert.equal((await postEvent(session.id, answer)).status, 202);
      await stream.waitForType('agent.session.turn.completed', waiting.data.turn_id);
      assert.equal((await sendMessage(session.id, 'no luck [[fail:model_bad_request]]')).status, 202);
      await stream.waitForType('agent.session.turn.failed');
      conform(stream.events);
      const items = stream.events.filter((e) => e.type === 'agent.session.turn.item.done').map((e) => e.data.item.type);
      assert.ok(items.includes('function_call') && items.includes('function_call_output'), `tool items: ${items.join(', ')}`);
    });

    await t.test('a steered turn: the run yields and the next run of the same turn takes the steer', async () => {
      const session = await createSession();
      const stream = await open(session.id);
      await sendMessage(session.id, SLOW);
      const created = await stream.waitForType('agent.session.turn.created');
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' two');
      const steer = await postEvent(session.id, { type: 'agent.session.input.message', input: 'change of plan', yuxi: { mode: 'steer' } });
      assert.equal(steer.status, 202);
      await stream.waitForType('yuxi.session.run.yielded', created.data.turn_id);
      await stream.waitForType('agent.session.turn.completed', created.data.turn_id);
      conform(stream.events);
    });

    await t.test('reasoning from an OpenAI-compatible model', async () => {
      const { id, model } = await putAgent({ instructions: 'Think first.' });
      fake.script(fakeModel(model), [{ reasoning: ['Let me', ' think.'], text: ['Done', '.'], usage: { prompt_tokens: 5, completion_tokens: 2 } }]);
      const session = await createSessionWith(id, 'think');
      const stream = await open(session.id);
      await stream.waitForType('agent.session.turn.completed');
      conform(stream.events);
      assert.ok(stream.events.some((e) => e.type === 'yuxi.session.turn.reasoning.done'));
    });

    await t.test('an agent whose MCP server is down: capability_limited, and the turn completes', async () => {
      // A port that was just listening and is closed now: the server is down.
      const probe = createServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      const { port } = probe.address() as { port: number };
      await new Promise<void>((resolve) => probe.close(() => resolve()));
      const { id, model } = await putAgent({ tools: [{ type: 'mcp', server_label: 'down', server_url: `http://127.0.0.1:${port}/mcp` }] });
      fake.script(fakeModel(model), [{ text: 'Without tools.' }]);
      const session = await createSessionWith(id, 'hello');
      const stream = await open(session.id);
      await stream.waitForType('agent.session.turn.completed');
      conform(stream.events);
      assert.ok(stream.events.some((e) => e.type === 'yuxi.session.turn.capability_limited'));
    });

    await t.test('an MCP call that reports progress: tool_progress (the reference server\'s long-running operation)', async () => {
      const everything = await startEverythingServer();
      try {
        const long = 'trigger-long-running-operation';
        const { id, model } = await putAgent({ tools: [{ type: 'mcp', server_label: 'everything', server_url: everything.url, allowed_tools: [long] }] });
        fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c_long', name: long, arguments: '{"duration":1,"steps":2}' }] }, { text: 'Done.' }]);
        const session = await createSessionWith(id, 'go');
        const stream = await open(session.id);
        await stream.waitForType('agent.session.turn.completed', undefined, 30_000);
        conform(stream.events);
        assert.ok(stream.events.some((e) => e.type === 'yuxi.session.turn.tool_progress'));
      } finally {
        await everything.close();
      }
    });

    await t.test('a manual compaction: started, then completed with the compaction item', async () => {
      const session = await createSession('the ticket is T-1');
      const stream = await open(session.id);
      await stream.waitForType('agent.session.turn.completed');
      assert.equal((await postEvent(session.id, { type: 'yuxi.session.input.compact' })).status, 202);
      const completed = await stream.waitFor((e) => e.type === 'yuxi.session.turn.context_compression' && e.data.phase === 'completed');
      await stream.waitForType('agent.session.turn.completed', completed.data.turn_id);
      conform(stream.events);
      assert.equal(completed.data.item.type, 'compaction');
    });

    await t.test('a coordinator: a member created, its settled state, the cooperation wait', async () => {
      const created = await createSessionWith('coordinator', '[[tool:create_subagent {"task":"hi","name":"m"}]] [[tool:wait_subagents {}]]');
      const stream = await open(created.id);
      await stream.waitForType('agent.session.turn.completed');
      await stream.waitForType('yuxi.session.subagent.state');
      conform(stream.events);
      assert.ok(stream.events.some((e) => e.type === 'agent.session.subagent.created'));
    });

    await t.test('a command in a session\'s workspace: its command_execution item and its live output', async () => {
      const created = await http(`${API}/sessions`, { idempotencyKey: newKey('env'), body: { agent_id: 'default-chatbot', environment: { type: 'openai_hosted' } } });
      assert.equal(created.status, 201, created.text);
      const stream = await open(created.body.id);
      assert.equal((await sendMessage(created.body.id, '[[tool:shell {"command":"echo hi"}]]')).status, 202);
      await stream.waitForType('agent.session.turn.completed', undefined, 30_000);
      conform(stream.events);
      assert.ok(stream.events.some((e) => e.type === 'agent.output.command_execution_output.delta'));
      assert.ok(stream.events.some((e) => e.type === 'agent.session.turn.item.done' && e.data.item.type === 'command_execution' && e.data.item.exit_code === 0));
    });

    await t.test('a budget without room: budget.reached, then the turn waits at a budget waitpoint', async () => {
      const session = await createSession('spend the one call');
      const stream = await open(session.id);
      await stream.waitForType('agent.session.turn.completed');
      const budget = await http(`${API}/budgets`, { body: { scope: { session_id: session.id }, limits: { model_calls: 1 } } });
      assert.equal(budget.status, 201, budget.text);
      assert.equal((await sendMessage(session.id, 'one more')).status, 202);
      const waiting = await stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && e.data.waitpoint.kind === 'budget');
      conform(stream.events);
      assert.ok(stream.events.some((e) => e.type === 'yuxi.session.budget.reached' && e.data.turn_id === waiting.data.turn_id));
    });

    await t.test('a resync for a cursor older than the replay window', async () => {
      const session = await createSession(`before the window moved ${NODE_FILLING_INPUT}`);
      const first = await open(session.id);
      await first.waitForType('agent.session.turn.completed');
      first.close();
      // The window moves on for real: see moveReplayWindow.
      await moveReplayWindow(session.id);
      const resumed = await open(session.id, first.events[0]!.id);
      await resumed.waitForType('yuxi.session.resync');
      conform(resumed.events);
    });

    // Checked here, after the scenarios above: together they meet every event type.
    const missing = Object.keys(EVENT_TYPES).filter((type) => !seen.has(type));
    assert.deepEqual(missing, ['yuxi.session.run.interrupted'], 'the scenarios met every event type but the interruption of a run (a dead worker: the fault suite)');
  });
});
