import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, createSession, http, postEvent, sendMessage } from '../support/http.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { type SseEvent, SseStream } from '../support/sse.js';


// Real models (a fake OpenAI-compatible server on the wire), real MCP tools, waitpoints and
// client tools, end to end through the api, Postgres, BullMQ, the worker and SSE.
describe('agent runtime', () => {
  let fake: FakeOpenAi;
  let mcp: TestMcpServer;
  const streams: SseStream[] = [];
  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    mcp = await startMcpServer();
  });
  after(async () => {
    streams.forEach((s) => s.close());
    await fake.close();
    await mcp.close();
  });

  async function start(agentId: string, input: string): Promise<{ session: any; stream: SseStream; turnId: string }> {
    const session = await createSessionWith(agentId, input);
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const created = await stream.waitForType('agent.session.turn.created');
    return { session, stream, turnId: created.data.turn_id };
  }
  const items = async (sessionId: string, turnId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
  const turn = async (sessionId: string, turnId: string): Promise<any> => (await http(`${API}/sessions/${sessionId}/turns/${turnId}`)).body;
  const mcpTool = (extra: object = {}): object => ({ type: 'mcp', server_label: 'calc', server_url: mcp.url, allowed_tools: ['add', 'record_side_effect'], ...extra });

  it('streams a text turn from an OpenAI-compatible model and records its usage', async () => {
    const { id, model } = await putAgent({ instructions: 'Be brief.' });
    fake.script(fakeModel(model), [{ text: ['Hello', ' world'], usage: { prompt_tokens: 12, completion_tokens: 2 } }]);
    const { session, stream, turnId } = await start(id, 'hi');
    const done = await stream.waitForType('agent.session.turn.completed', turnId);
    assert.deepEqual(done.data.turn.yuxi.usage, { input_tokens: 12, output_tokens: 2, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 14, model_calls: 1, tool_calls: 0, cost_microusd: null });
    const deltas = stream.events.filter((e) => e.type === 'agent.session.turn.output_text.delta').map((e) => e.data.delta);
    assert.deepEqual(deltas, ['Hello', ' world']);
    const output = (await turn(session.id, turnId)).yuxi.output;
    assert.equal(output[0].content[0].text, 'Hello world');
    assert.equal(output[0].phase, 'final_answer');
    const [request] = fake.requests(fakeModel(model)) as any[];
    assert.equal(request.stream, true);
    assert.deepEqual(request.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
    const detail = await turn(session.id, turnId);
    assert.deepEqual(detail.yuxi.runs[0].usage, done.data.turn.yuxi.usage);
  });

  it('runs the tool loop through an MCP server: call, output, answer, with the stable idempotency key', async () => {
    const { id, model } = await putAgent({ tools: [mcpTool()] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'call_add_1', name: 'add', arguments: '{"a":2,"b":3}', chunks: 4 }], text: 'Let me add.' }, { text: 'The sum is 5' }]);
    const { session, stream, turnId } = await start(id, 'what is 2+3?');
    await stream.waitForType('agent.session.turn.completed', turnId);

    const list = await items(session.id, turnId);
    assert.deepEqual(
      list.map((i) => i.type + (i.role ? `:${i.role}` : '')),
      ['message:user', 'message:assistant', 'function_call', 'function_call_output', 'message:assistant'],
    );
    assert.equal(list[1].content[0].text, 'Let me add.');
    assert.equal(list[1].phase, 'commentary');
    assert.deepEqual({ call_id: list[2].call_id, name: list[2].name, arguments: list[2].arguments }, { call_id: 'call_add_1', name: 'add', arguments: '{"a":2,"b":3}' });
    assert.equal(list[3].call_id, 'call_add_1');
    assert.equal(list[3].output, '5');
    assert.equal(list[3].yuxi.success, true);
    assert.equal(list[4].content[0].text, 'The sum is 5');

    const call = mcp.calls.find((c) => c.metaKey?.startsWith(turnId));
    assert.ok(call, 'the MCP server was called');
    assert.deepEqual(call.args, { a: 2, b: 3 });
    assert.equal(call.metaKey, `${turnId}:call_add_1`);
    assert.equal(call.headerKey, `${turnId}:call_add_1`);

    const [first, second] = fake.requests(fakeModel(model)) as any[];
    assert.ok(first.tools.some((t: any) => t.function.name === 'add'), 'the MCP tool is offered to the model');
    assert.deepEqual(second.messages.at(-1), { role: 'tool', tool_call_id: 'call_add_1', content: '5' });
    const calling = second.messages.at(-2);
    assert.equal(calling.tool_calls[0].id, 'call_add_1');

    // Each item is committed before its done event: the call's done precedes its output's added.
    const order = stream.events.filter((e: SseEvent) => e.type.startsWith('agent.session.turn.item.')).map((e) => `${e.type.split('.').at(-1)}:${e.data.item.type}`);
    assert.ok(order.indexOf('done:function_call') < order.indexOf('added:function_call_output'));
  });

  it('takes a steer that arrived during a tool call at the next step boundary, before the model is called again', async () => {
    const { id, model } = await putAgent({ tools: [mcpTool({ allowed_tools: ['hold'] })] });
    const note = `hold-${randomUUID()}`;
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'call_hold', name: 'hold', arguments: JSON.stringify({ note }) }], text: 'Checking.' }, { text: 'Changed course' }]);
    const { session, stream, turnId } = await start(id, 'start the slow job');
    // The call is running (held by the server) when the steer is accepted; it returns afterwards.
    for (let i = 0; i < 200 && !mcp.calls.some((c) => c.tool === 'hold' && c.args.note === note); i += 1) await sleep(50);
    assert.ok(mcp.calls.some((c) => c.tool === 'hold' && c.args.note === note), 'the tool call reached the MCP server');
    const steer = await postEvent(session.id, { type: 'agent.session.input.message', input: 'change of plan', yuxi: { mode: 'steer' } });
    assert.equal(steer.status, 202);
    mcp.release(note);
    await stream.waitForType('agent.session.turn.completed', turnId);

    const detail = await turn(session.id, turnId);
    assert.deepEqual(detail.yuxi.runs.map((r: any) => r.status), ['yielded', 'completed']);
    assert.deepEqual(detail.yuxi.runs[1].input_ids, [steer.body.input_id]);
    const list = await items(session.id, turnId);
    assert.deepEqual(
      list.map((i) => i.type + (i.role ? `:${i.role}` : '')),
      ['message:user', 'message:assistant', 'function_call', 'function_call_output', 'message:user', 'message:assistant'],
    );
    assert.equal(list[3].output, `released ${note}`);
    assert.equal(list[4].content[0].text, 'change of plan');
    assert.equal(list[5].content[0].text, 'Changed course');
    // The model was not called between the tool result and the steer: the second call already sees both.
    const requests = fake.requests(fakeModel(model)) as any[];
    assert.equal(requests.length, 2);
    assert.deepEqual(requests[1].messages.slice(-2).map((m: any) => m.role), ['tool', 'user']);
    // Every item of the turn has its own output index, in history order.
    const indexOf = new Map(
      stream.events.filter((e: SseEvent) => e.type === 'agent.session.turn.item.done' && e.data.turn_id === turnId).map((e) => [e.data.item.id, e.data.output_index]),
    );
    assert.deepEqual(
      list.map((i) => indexOf.get(i.id)),
      list.map((_, index) => index),
    );
  });

  it('gives a call id the provider reuses within a turn a fresh one, so both calls keep their results', async () => {
    const { id, model } = await putAgent({ tools: [mcpTool()] });
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 'call_0', name: 'add', arguments: '{"a":1,"b":1}' }] },
      { tool_calls: [{ id: 'call_0', name: 'add', arguments: '{"a":2,"b":2}' }] },
      { text: 'two sums' },
    ]);
    const { session, stream, turnId } = await start(id, 'add twice');
    await stream.waitForType('agent.session.turn.completed', turnId);
    const list = await items(session.id, turnId);
    const calls = list.filter((i) => i.type === 'function_call');
    const outputs = list.filter((i) => i.type === 'function_call_output');
    assert.equal(calls[0].call_id, 'call_0');
    assert.notEqual(calls[1].call_id, 'call_0');
    assert.deepEqual(
      outputs.map((o) => [o.call_id, o.output]),
      [
        ['call_0', '2'],
        [calls[1].call_id, '4'],
      ],
    );
  });

  it('answers invalid arguments with an error output and never runs the call', async () => {
    const { id, model } = await putAgent({ tools: [mcpTool()] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'bad_1', name: 'add', arguments: '{"a":"two","b":1}' }] }, { text: 'sorry' }]);
    const before = mcp.calls.length;
    const { session, stream, turnId } = await start(id, 'add badly');
    await stream.waitForType('agent.session.turn.completed', turnId);
    const output = (await items(session.id, turnId)).find((i) => i.type === 'function_call_output');
    assert.equal(output.yuxi.success, false);
    assert.match(output.output, /Invalid arguments for add/);
    assert.equal(mcp.calls.length, before, 'nothing reached the MCP server');
  });

  it('retries a rate-limited model call after its Retry-After, then succeeds', async () => {
    const { id, model } = await putAgent({});
    fake.script(fakeModel(model), [{ status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down', type: 'rate_limit_error' } } }, { text: 'finally' }]);
    const { session, stream, turnId } = await start(id, 'hi');
    await stream.waitForType('agent.session.turn.completed', turnId);
    assert.equal(fake.requests(fakeModel(model)).length, 2);
    assert.equal((await turn(session.id, turnId)).yuxi.output[0].content[0].text, 'finally');
  });

  it('a non-retryable model error fails the turn and pauses the inputs waiting behind it', async () => {
    const { id, model } = await putAgent({ tools: [{ type: 'builtin', name: 'ask_user' }] });
    // The first call is held until the follow-up is queued: a waiting turn refuses messages.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 'q1', name: 'ask_user', arguments: '{"question":"Go?"}' }], until: held },
      { status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error', code: null } } },
    ]);
    const { session, stream, turnId } = await start(id, 'start');
    await stream.waitForType('agent.session.turn.in_progress', turnId);
    const queued = await sendMessage(session.id, 'next one');
    release();
    assert.equal(queued.status, 202, 'a follow-up queues behind an executing turn');
    const waiting = await stream.waitForType('yuxi.session.turn.waiting', turnId);
    await postEvent(session.id, {
      type: 'yuxi.session.input.resume',
      turn_id: turnId,
      waitpoint_id: waiting.data.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: 'q1', answer: 'yes' }] },
    });
    const failed = await stream.waitForType('agent.session.turn.failed', turnId);
    assert.equal(failed.data.turn.error.code, 'model_bad_request');
    const after = (await http(`${API}/sessions/${session.id}`)).body;
    assert.equal(after.yuxi.queue_paused, true);
    assert.equal(after.yuxi.queued_input_count, 1);
    assert.equal(fake.requests(fakeModel(model)).length, 2, 'a 400 is not retried');
  });

  it('enforces the per-turn limits with clear codes', async () => {
    const models = await putAgent({ tools: [mcpTool()], limits: { max_model_calls: 1 } });
    fake.script(fakeModel(models.model), [{ tool_calls: [{ id: 'l1', name: 'add', arguments: '{"a":1,"b":2}' }] }, { text: 'never asked' }]);
    const first = await start(models.id, 'go');
    const failed = await first.stream.waitForType('agent.session.turn.failed', first.turnId);
    assert.equal(failed.data.turn.error.code, 'turn_model_call_limit');
    assert.equal(fake.requests(fakeModel(models.model)).length, 1);

    const tools = await putAgent({ tools: [mcpTool()], limits: { max_tool_calls: 0 } });
    fake.script(fakeModel(tools.model), [{ tool_calls: [{ id: 'l2', name: 'add', arguments: '{"a":1,"b":2}' }] }]);
    const second = await start(tools.id, 'go');
    const limited = await second.stream.waitForType('agent.session.turn.failed', second.turnId);
    assert.equal(limited.data.turn.error.code, 'turn_tool_call_limit');
    assert.equal(mcp.calls.filter((c) => c.metaKey?.startsWith(second.turnId)).length, 0);
  });

  it('streams reasoning live, linked to the assistant message, and keeps it with the message (never sent back to the model)', async () => {
    const { id, model } = await putAgent({});
    fake.script(fakeModel(model), [{ reasoning: ['Thinking', ' hard'], text: ['Done'] }, { text: 'Again' }]);
    const { session, stream, turnId } = await start(id, 'think');
    await stream.waitForType('agent.session.turn.completed', turnId);
    const deltas = stream.events.filter((e) => e.type === 'yuxi.session.turn.reasoning.delta');
    assert.deepEqual(
      deltas.map((e) => [e.data.delta, e.data.reasoning_index]),
      [
        ['Thinking', 0],
        [' hard', 0],
      ],
    );
    const done = stream.events.find((e) => e.type === 'yuxi.session.turn.reasoning.done');
    assert.equal(done?.data.text, 'Thinking hard');
    assert.equal(done?.data.reasoning_index, 0);
    const message = stream.events.find((e) => e.type === 'agent.session.turn.item.done' && e.data.item.role === 'assistant');
    assert.equal(done?.data.item_id, message?.data.item.id);
    // The block closes (saved, then done) before the text starts.
    const order = stream.events.map((e) => e.type);
    assert.ok(order.indexOf('yuxi.session.turn.reasoning.done') < order.indexOf('agent.session.turn.output_text.delta'));
    assert.deepEqual(message?.data.item.yuxi.reasoning, [{ type: 'reasoning_text', text: 'Thinking hard' }]);

    const stored = (await items(session.id, turnId)).find((i) => i.role === 'assistant');
    assert.deepEqual(stored.content.map((p: any) => [p.type, p.text]), [['output_text', 'Done']], 'content keeps the text only');
    assert.deepEqual(stored.yuxi.reasoning, [{ type: 'reasoning_text', text: 'Thinking hard' }]);
    assert.equal(stored.yuxi.completed_content_indices, undefined, 'a settled message names no completed blocks');

    const next = await sendMessage(session.id, 'again');
    await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== turnId);
    assert.equal(next.status, 202);
    const [, second] = fake.requests(fakeModel(model)) as any[];
    assert.ok(!JSON.stringify(second.messages).includes('Thinking hard'), 'the model never gets reasoning back');
    assert.ok(second.messages.some((m: any) => m.role === 'assistant' && m.content === 'Done'));
  });

  it('an in-progress message is readable with its completed reasoning; a cancel keeps it as incomplete', async () => {
    const { id, model } = await putAgent({});
    fake.script(fakeModel(model), [{ reasoning: ['Weighing', ' options'], text: ['Part', 'ial'], stall: true }]);
    const { session, stream, turnId } = await start(id, 'think slowly');
    await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === 'ial');
    const done = stream.events.find((e) => e.type === 'yuxi.session.turn.reasoning.done');
    assert.ok(done, 'reasoning.done was sent');

    // Saved before its done event: the items show the streaming message with its reasoning complete.
    const ascending = (await http(`${API}/sessions/${session.id}/items?order=asc&limit=100`)).body;
    const active = ascending.data.at(-1);
    assert.equal(active.id, done.data.item_id);
    assert.equal(active.status, 'in_progress');
    assert.equal(active.role, 'assistant');
    assert.deepEqual(active.yuxi.reasoning, [{ type: 'reasoning_text', text: 'Weighing options' }]);
    assert.deepEqual(active.yuxi.completed_reasoning_indices, [0]);
    assert.deepEqual(active.yuxi.completed_content_indices, []);
    assert.equal(active.yuxi.run_id, done.data.yuxi.run_id);
    assert.ok(ascending.yuxi.runs.some((r: any) => r.id === active.yuxi.run_id));
    const ofTurn = (await http(`${API}/sessions/${session.id}/turns/${turnId}/items?order=desc&limit=1`)).body;
    assert.equal(ofTurn.data[0].id, active.id, 'descending, it comes first');
    assert.equal(ofTurn.has_more, true);
    const afterIt = (await http(`${API}/sessions/${session.id}/items?order=asc&after=${active.id}`)).body;
    assert.deepEqual([afterIt.data.length, afterIt.has_more], [0, false], 'nothing is newer than the streaming message');

    assert.equal((await postEvent(session.id, { type: 'agent.session.input.cancel' })).status, 202);
    await stream.waitForType('agent.session.turn.cancelled', turnId);
    const kept = (await items(session.id, turnId)).find((i) => i.id === active.id);
    assert.equal(kept.status, 'incomplete');
    assert.deepEqual(kept.yuxi.reasoning, [{ type: 'reasoning_text', text: 'Weighing options' }]);
    assert.equal(kept.yuxi.completed_reasoning_indices, undefined);
  });

  it('the scripted model calls builtin tools and asks through ask_user', async () => {
    const session = await createSession('[[tool:calculator {"expression":"2+3*4"}]]');
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const done = await stream.waitForType('agent.session.turn.completed');
    const output = (await turn(session.id, done.data.turn_id)).yuxi.output;
    assert.equal(output[0].content[0].text, 'Tool calculator returned: 14');

    await sendMessage(session.id, '[[ask:Your name?]]');
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    const question = waiting.data.waitpoint.questions[0];
    await postEvent(session.id, {
      type: 'yuxi.session.input.resume',
      turn_id: waiting.data.turn_id,
      waitpoint_id: waiting.data.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: question.question_id, answer: 'Ada' }] },
    });
    const answered = await stream.waitForType('agent.session.turn.completed', waiting.data.turn_id);
    assert.equal((await turn(session.id, answered.data.turn_id)).yuxi.output[0].content[0].text, 'Answer: Ada');
  });
});
