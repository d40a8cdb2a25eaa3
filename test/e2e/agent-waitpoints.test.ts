import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, createSession, http, postEvent, sendMessage } from '../support/http.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { SseStream } from '../support/sse.js';

// A turn that stops for a person, end to end: questions, approvals and client tools as waitpoints,
// what a waiting turn refuses, and the limits of the answers. The model is the fake OpenAI-compatible
// server, the tools a real MCP server; the rest of the runtime is in agent-runtime.test.ts.
describe('agent runtime: waitpoints', () => {
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

});
