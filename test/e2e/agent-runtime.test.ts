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
    assert.deepEqual(done.data.turn.yuxi.usage, { input_tokens: 12, output_tokens: 2, cached_tokens: 0, total_tokens: 14 });
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

  it('asks questions: a partial answer is 422 and keeps waiting, a complete one resumes the turn in a new run, a stale one is 409', async () => {
    const { id, model } = await putAgent({ tools: [{ type: 'builtin', name: 'ask_user' }] });
    fake.script(fakeModel(model), [
      {
        tool_calls: [
          { id: 'q1', name: 'ask_user', arguments: JSON.stringify({ question: 'Colour?', options: ['red', 'blue'] }) },
          { id: 'q2', name: 'ask_user', arguments: JSON.stringify({ question: 'Size?' }) },
        ],
      },
      { text: 'Noted.' },
    ]);
    const { session, stream, turnId } = await start(id, 'order a shirt');
    const waiting = await stream.waitForType('yuxi.session.turn.waiting', turnId);
    const wp = waiting.data.waitpoint;
    assert.equal(wp.kind, 'question');
    assert.deepEqual(
      wp.questions.map((q: any) => [q.question_id, q.question, q.options, q.allow_other]),
      [
        ['q1', 'Colour?', ['red', 'blue'], false],
        ['q2', 'Size?', [], true],
      ],
    );
    assert.equal((await http(`${API}/sessions/${session.id}`)).body.status, 'requires_action');
    assert.equal((await turn(session.id, turnId)).yuxi.waitpoint.id, wp.id);

    const plain = await postEvent(session.id, { type: 'agent.session.input.message', input: 'hello?' });
    assert.equal(plain.status, 409, 'a plain message while a question waits');
    const resume = (answers: object[]) => ({ type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: wp.id, response: { type: 'answer', answers } });
    const partial = await postEvent(session.id, resume([{ question_id: 'q1', answer: 'red' }]));
    assert.equal(partial.status, 422);
    assert.equal(partial.body.error.code, 'waitpoint_incomplete');
    const offMenu = await postEvent(session.id, resume([{ question_id: 'q1', answer: 'green' }, { question_id: 'q2', answer: 'L' }]));
    assert.equal(offMenu.status, 422);
    const foreign = await postEvent(session.id, resume([{ question_id: 'q1', answer: 'red' }, { question_id: 'q9', answer: 'L' }]));
    assert.equal(foreign.status, 409);
    assert.equal((await turn(session.id, turnId)).status, 'requires_action', 'still waiting after refused answers');

    const complete = resume([{ question_id: 'q1', answer: 'red' }, { question_id: 'q2', answer: 'L' }]);
    const accepted = await postEvent(session.id, complete, 'answer-key-1' + turnId);
    assert.equal(accepted.status, 202);
    assert.equal(accepted.body.turn_id, turnId);
    const replay = await postEvent(session.id, complete, 'answer-key-1' + turnId);
    assert.equal(replay.status, 202);
    assert.equal(replay.text, accepted.text, 'a replay answers the first receipt');
    const changed = await postEvent(session.id, resume([{ question_id: 'q1', answer: 'blue' }, { question_id: 'q2', answer: 'L' }]), 'answer-key-1' + turnId);
    assert.equal(changed.status, 409);
    assert.equal(changed.body.error.code, 'idempotency_conflict');
    const stale = await postEvent(session.id, complete);
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'waitpoint_stale');

    await stream.waitForType('agent.session.turn.completed', turnId);
    const outputs = (await items(session.id, turnId)).filter((i) => i.type === 'function_call_output');
    assert.deepEqual(
      outputs.map((o) => [o.call_id, o.output]),
      [
        ['q1', 'red'],
        ['q2', 'L'],
      ],
    );
    const runs = (await turn(session.id, turnId)).yuxi.runs;
    assert.deepEqual(
      runs.map((r: any) => r.status),
      ['requires_action', 'completed'],
    );
    assert.equal(runs[1].resume_from_run_id, runs[0].id);
    assert.equal(accepted.body.run_id, runs[1].id);
    assert.equal(fake.requests(fakeModel(model)).length, 2);
  });

  it('approvals: a rejected call never runs, an approved one does, approve_session trusts the tool for the session', async () => {
    const { id, model } = await putAgent({ tools: [mcpTool({ requires_approval: true })] });
    const m = fakeModel(model);
    fake.script(m, [
      { tool_calls: [{ id: 'a1', name: 'add', arguments: '{"a":1,"b":1}' }] },
      { text: 'ok 1' },
      { tool_calls: [{ id: 'a2', name: 'add', arguments: '{"a":2,"b":2}' }] },
      { text: 'ok 2' },
      { tool_calls: [{ id: 'a3', name: 'add', arguments: '{"a":3,"b":3}' }] },
      { text: 'ok 3' },
      { tool_calls: [{ id: 'a4', name: 'add', arguments: '{"a":4,"b":4}' }] },
      { text: 'ok 4' },
    ]);
    const { session, stream, turnId } = await start(id, 'first');
    const decide = async (turnId: string, decision: string, message?: string): Promise<void> => {
      const waiting = await stream.waitForType('yuxi.session.turn.waiting', turnId);
      assert.equal(waiting.data.waitpoint.kind, 'approval');
      const call = waiting.data.waitpoint.tool_calls[0];
      const res = await postEvent(session.id, {
        type: 'yuxi.session.input.resume',
        turn_id: turnId,
        waitpoint_id: waiting.data.waitpoint.id,
        response: { type: 'approval', decisions: [{ call_id: call.call_id, decision, ...(message ? { message } : {}) }] },
      });
      assert.equal(res.status, 202, res.text);
      await stream.waitForType('agent.session.turn.completed', turnId);
    };
    const callsFor = (turnId: string) => mcp.calls.filter((c) => c.metaKey?.startsWith(turnId));

    await decide(turnId, 'reject', 'not now');
    assert.equal(callsFor(turnId).length, 0, 'a rejected call never executes');
    const rejected = (await items(session.id, turnId)).find((i) => i.type === 'function_call_output');
    assert.equal(rejected.output, 'The user rejected this call of add: not now');

    const nextTurn = async (text: string): Promise<string> => {
      const count = stream.events.filter((e) => e.type === 'agent.session.turn.created').length;
      await sendMessage(session.id, text);
      const created = await stream.waitFor((e) => e.type === 'agent.session.turn.created' && stream.events.filter((x) => x.type === 'agent.session.turn.created').indexOf(e) === count);
      return created.data.turn_id;
    };
    const second = await nextTurn('second');
    await decide(second, 'approve');
    assert.equal(callsFor(second).length, 1);

    const third = await nextTurn('third');
    await decide(third, 'approve_session');
    assert.equal(callsFor(third).length, 1);

    const fourth = await nextTurn('fourth');
    await stream.waitForType('agent.session.turn.completed', fourth);
    assert.equal(callsFor(fourth).length, 1, 'trusted for the session: ran without asking');
    assert.equal(stream.events.filter((e) => e.type === 'yuxi.session.turn.waiting' && e.data.turn_id === fourth).length, 0);
  });

  it('client tools: the turn waits for tool_result; a wrong call is 409, a replay answers the same receipt', async () => {
    const { id, model } = await putAgent({
      tools: [{ type: 'function', name: 'lookup_order', description: 'Look an order up', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } }],
    });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c1', name: 'lookup_order', arguments: '{"order_id":"A-1042"}' }] }, { text: 'It is packed.' }]);
    const { session, stream, turnId } = await start(id, 'where is my order?');
    const waiting = await stream.waitForType('yuxi.session.turn.waiting', turnId);
    assert.equal(waiting.data.waitpoint.kind, 'client_tool');
    assert.deepEqual(waiting.data.waitpoint.tool_calls, [{ call_id: 'c1', name: 'lookup_order', arguments: '{"order_id":"A-1042"}' }]);

    const result = (callId: string, output: string) => ({ type: 'tool_result', turn_id: turnId, call_id: callId, success: true, output });
    const wrong = await postEvent(session.id, result('c9', '{}'));
    assert.equal(wrong.status, 409);
    assert.equal(wrong.body.error.code, 'waitpoint_stale');
    const key = `tool-result-${turnId}`;
    const accepted = await postEvent(session.id, result('c1', '{"status":"packed"}'), key);
    assert.equal(accepted.status, 202, accepted.text);
    const replay = await postEvent(session.id, result('c1', '{"status":"packed"}'), key);
    assert.equal(replay.text, accepted.text);
    const changed = await postEvent(session.id, result('c1', '{"status":"lost"}'), key);
    assert.equal(changed.body.error.code, 'idempotency_conflict');
    const again = await postEvent(session.id, result('c1', '{"status":"lost"}'));
    assert.equal(again.status, 409, 'a call answered once is answered');

    await stream.waitForType('agent.session.turn.completed', turnId);
    const output = (await items(session.id, turnId)).find((i) => i.type === 'function_call_output');
    assert.equal(output.output, '{"status":"packed"}');
    const [, second] = fake.requests(fakeModel(model)) as any[];
    assert.deepEqual(second.messages.at(-1), { role: 'tool', tool_call_id: 'c1', content: '{"status":"packed"}' });
  });

  it('input text has a limit of its own (413 input_text_too_large naming the part); a long client tool result is stored cut', async () => {
    const LIMIT = 256 * 1024; // MAX_INPUT_TEXT_BYTES's default
    const long = 'x'.repeat(LIMIT + 1);
    const created = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', input: long }, idempotencyKey: randomUUID() });
    assert.equal(created.status, 413, created.text);
    assert.equal(created.body.error.code, 'input_text_too_large');
    assert.deepEqual(created.body.error.details, { field: 'input', limit_bytes: LIMIT });
    // Per submission: two parts that fit alone but not together; the field is where the sum passed the limit.
    const half = 'é'.repeat(LIMIT / 4 + 1); // 2 bytes each: just over half the limit
    const split = await http(`${API}/sessions`, {
      body: { agent_id: 'default-chatbot', input: [{ role: 'user', content: half }, { role: 'user', content: [{ type: 'input_text', text: 'ok' }, { type: 'input_text', text: half }] }] },
      idempotencyKey: randomUUID(),
    });
    assert.equal(split.status, 413, split.text);
    assert.equal(split.body.error.details.field, 'input[1].content[1].text');

    const { id, model } = await putAgent({
      tools: [{ type: 'function', name: 'fetch_report', description: 'A long report', parameters: { type: 'object', properties: {} } }],
    });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'c1', name: 'fetch_report', arguments: '{}' }] }, { text: 'Read it.' }]);
    const { session, stream, turnId } = await start(id, 'the report, please');
    const message = await postEvent(session.id, { type: 'agent.session.input.message', input: long, yuxi: { mode: 'follow_up' } });
    assert.equal(message.status, 413, message.text);
    assert.equal(message.body.error.code, 'input_text_too_large');
    assert.equal(message.body.error.details.field, 'events[0].input');
    await stream.waitForType('yuxi.session.turn.waiting', turnId);
    const accepted = await postEvent(session.id, { type: 'tool_result', turn_id: turnId, call_id: 'c1', success: true, output: `${'r'.repeat(LIMIT)}tail` });
    assert.equal(accepted.status, 202, accepted.text);
    await stream.waitForType('agent.session.turn.completed', turnId);
    const output = (await items(session.id, turnId)).find((i) => i.type === 'function_call_output').output as string;
    assert.equal(output, `${'r'.repeat(LIMIT)}\n[truncated: 4 more bytes]`);
  });

  it('the answers of a waitpoint response share the input text limit (413 input_text_too_large)', async () => {
    const { id, model } = await putAgent({ tools: [{ type: 'builtin', name: 'ask_user' }] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 'q1', name: 'ask_user', arguments: '{"question":"Which order?"}' }] }, { text: 'Thanks.' }]);
    const { session, stream, turnId } = await start(id, 'where is my order?');
    const asking = await stream.waitForType('yuxi.session.turn.waiting', turnId);
    const resume = (answer: string | string[]) =>
      postEvent(session.id, { type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: asking.data.waitpoint.id, response: { type: 'answer', answers: [{ question_id: 'q1', answer }] } });
    // 27 strings of 10,000 characters: each within its own bound, over 256 KiB together.
    const refused = await resume(Array.from({ length: 27 }, () => 'a'.repeat(10_000)));
    assert.equal(refused.status, 413, refused.text);
    assert.equal(refused.body.error.code, 'input_text_too_large');
    assert.equal(refused.body.error.details.field, 'events[0].response.answers[0].answer');
    assert.equal((await resume('A-1042')).status, 202);
    await stream.waitForType('agent.session.turn.completed', turnId);
  });

  it('retries a rate-limited model call after its Retry-After, then succeeds', async () => {
    const { id, model } = await putAgent({});
    fake.script(fakeModel(model), [{ status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down', type: 'rate_limit_error' } } }, { text: 'finally' }]);
    const { session, stream, turnId } = await start(id, 'hi');
    await stream.waitForType('agent.session.turn.completed', turnId);
    assert.equal(fake.requests(fakeModel(model)).length, 2);
    assert.equal((await turn(session.id, turnId)).yuxi.output[0].content[0].text, 'finally');
  });

  it('a turn waiting for a person refuses every message (409 turn_requires_action); a client tool wait queues explicit follow-ups', async () => {
    const { id, model } = await putAgent({
      tools: [
        { type: 'builtin', name: 'ask_user' },
        { type: 'function', name: 'lookup_order', description: 'Look an order up', parameters: { type: 'object', properties: {} } },
      ],
    });
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 'q1', name: 'ask_user', arguments: '{"question":"Which order?"}' }] },
      { tool_calls: [{ id: 'c1', name: 'lookup_order', arguments: '{}' }] },
      { text: 'Found it.' },
      { text: 'Queued one answered.' },
    ]);
    const { session, stream, turnId } = await start(id, 'where is my order?');
    const asking = await stream.waitForType('yuxi.session.turn.waiting', turnId);
    const message = (mode?: string) => postEvent(session.id, { type: 'agent.session.input.message', input: `${mode ?? 'auto'} while asked`, ...(mode ? { yuxi: { mode } } : {}) });
    for (const mode of ['follow_up', 'steer', undefined]) {
      const refused = await message(mode);
      assert.equal(refused.status, 409, `${mode ?? 'auto'} is refused while a question waits`);
      assert.equal(refused.body.error.code, 'turn_requires_action');
      assert.deepEqual(refused.body.error.details, { turn_id: turnId, waitpoint_id: asking.data.waitpoint.id, kind: 'question' });
    }
    assert.equal((await http(`${API}/sessions/${session.id}/queue`)).body.data.length, 0, 'nothing was queued');
    const answered = await postEvent(session.id, {
      type: 'yuxi.session.input.resume',
      turn_id: turnId,
      waitpoint_id: asking.data.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: 'q1', answer: 'A-1042' }] },
    });
    assert.equal(answered.status, 202);

    // A client tool wait: a program is asked, not a person; an explicit follow-up queues (FIFO).
    const toolWait = await stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && e.data.waitpoint.kind === 'client_tool');
    assert.equal(toolWait.data.turn_id, turnId);
    assert.equal((await message('steer')).body.error?.code, 'turn_requires_action');
    assert.equal((await message()).body.error?.code, 'turn_requires_action');
    const queued = await message('follow_up');
    assert.equal(queued.status, 202, queued.text);
    const promote = await postEvent(session.id, { type: 'yuxi.session.input.promote', input_id: queued.body.input_id });
    assert.equal(promote.body.error?.code, 'turn_requires_action', 'nothing is promoted into a waiting turn');
    assert.equal((await postEvent(session.id, { type: 'tool_result', turn_id: turnId, call_id: 'c1', success: true, output: 'packed' })).status, 202);
    await stream.waitForType('agent.session.turn.completed', turnId);
    const next = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== turnId);
    const consumed = await http(`${API}/sessions/${session.id}/inputs/${queued.body.input_id}`);
    assert.equal(consumed.body.turn_id, next.data.turn_id, 'the follow-up ran as the next turn');
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

  it('cancels a turn while it waits for an answer', async () => {
    const session = await createSession('[[ask:Proceed?]]');
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    const turnId = waiting.data.turn_id;
    assert.equal(waiting.data.waitpoint.questions[0].question, 'Proceed?');
    const cancel = await postEvent(session.id, { type: 'agent.session.input.cancel' });
    assert.equal(cancel.status, 202);
    const cancelled = await stream.waitForType('agent.session.turn.cancelled', turnId);
    assert.equal(cancelled.data.turn.yuxi.waitpoint, null);
    const runCancelled = stream.events.find((e) => e.type === 'yuxi.session.run.cancelled' && e.data.turn_id === turnId);
    assert.equal(runCancelled?.data.run.id, waiting.data.waitpoint.run_id, 'the waiting run ends cancelled too');
    assert.equal(cancel.body.run_id, waiting.data.waitpoint.run_id);
    const after = (await http(`${API}/sessions/${session.id}`)).body;
    assert.equal(after.status, 'cancelled');
    const stale = await postEvent(session.id, {
      type: 'yuxi.session.input.resume',
      turn_id: turnId,
      waitpoint_id: waiting.data.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: waiting.data.waitpoint.questions[0].question_id, answer: 'yes' }] },
    });
    assert.equal(stale.status, 409);
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
