import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type EverythingServer, startEverythingServer } from '../support/everything-server.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, http, postEvent, sendMessage } from '../support/http.js';
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

  it('reuses one MCP session for the three calls of two turns (at most one initialize), and initialises once more after the server restarts', async () => {
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
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['trigger-sampling-request'], sampling: true })] });
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
    assert.deepEqual(done?.data.turn.yuxi.usage, { input_tokens: 37, output_tokens: 9, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 46, model_calls: 3, tool_calls: 1, cost_microusd: null });
  });

  it('answers no sampling request from a server not declared with sampling: true', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['trigger-sampling-request'] })] });
    fake.script(fakeModel(model), [
      { tool_calls: [{ id: 's1', name: 'trigger-sampling-request', arguments: '{"prompt":"write a haiku","maxTokens":50}' }] },
      { text: 'No haiku.' },
    ]);
    const { sessionId, turnId } = await turn(id, 'sample please');
    const [result] = await outputs(sessionId, turnId);
    assert.equal(result.yuxi.success, false, JSON.stringify(result));
    assert.equal((fake.requests(fakeModel(model)) as any[]).length, 2, 'the session\'s model answered no sampling request');
  });

  it('counts a sampling completion against the turn\'s model calls', async () => {
    const { id, model } = await putAgent({ limits: { max_model_calls: 1 }, tools: [everything({ allowed_tools: ['trigger-sampling-request'], sampling: true })] });
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 's1', name: 'trigger-sampling-request', arguments: '{"prompt":"write a haiku","maxTokens":50}' }] }, { text: 'never' }]);
    const session = await createSessionWith(id, 'sample please');
    const stream = await SseStream.open(session.id);
    streams.push(stream);
    const created = await stream.waitForType('agent.session.turn.created');
    await stream.waitFor((e) => ['agent.session.turn.completed', 'agent.session.turn.failed'].includes(e.type) && e.data.turn_id === created.data.turn_id, 30_000);
    assert.equal((fake.requests(fakeModel(model)) as any[]).length, 1, 'the sampling request past the limit never reached the model');
    const [result] = await outputs(session.id, created.data.turn_id);
    assert.equal(result?.yuxi.success, false, JSON.stringify(result));
  });

  it('refuses a sampling request a budget of the turn has no room for: the model is not asked, the tool says why, and the turn stops at the budget', async () => {
    const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['trigger-sampling-request'], sampling: true })] });
    // One tool call of room: the tool call starts, and what it holds leaves none for a model call it asks for.
    const budget = await http(`${API}/budgets`, { body: { scope: { agent_id: id }, limits: { tool_calls: 1 }, on_exceeded: 'fail' } });
    assert.equal(budget.status, 201, budget.text);
    fake.script(fakeModel(model), [{ tool_calls: [{ id: 's1', name: 'trigger-sampling-request', arguments: '{"prompt":"write a haiku","maxTokens":50}' }] }, { text: 'never' }]);
    const session = await createSessionWith(id, 'sample please');
    const stream = await open(session.id);
    const created = await stream.waitForType('agent.session.turn.created');
    const failed = await stream.waitForType('agent.session.turn.failed', created.data.turn_id, 30_000);
    assert.equal(failed.data.turn.error.code, 'budget_exceeded');
    assert.equal((fake.requests(fakeModel(model)) as any[]).length, 1, 'the sampling request never reached the model');
    const [result] = await outputs(session.id, created.data.turn_id);
    assert.equal(result?.yuxi.success, false, JSON.stringify(result));
    assert.match(result.output, new RegExp(`sampling refused: budget ${budget.body.id} reached its tool_calls limit`));
  });

  describe('elicitation: a server\'s question to the user becomes a question waitpoint of the turn', () => {
    async function waitingTurn(answerScript: string): Promise<{ sessionId: string; turnId: string; stream: SseStream; waitpoint: any; model: string }> {
      const { id, model } = await putAgent({ tools: [everything({ allowed_tools: ['trigger-elicitation-request'] })] });
      fake.script(fakeModel(model), [{ tool_calls: [{ id: 'e1', name: 'trigger-elicitation-request', arguments: '{}' }] }, { text: answerScript }]);
      const session = await createSessionWith(id, 'ask me');
      const stream = await SseStream.open(session.id);
      streams.push(stream);
      const created = await stream.waitForType('agent.session.turn.created');
      const waiting = await stream.waitForType('yuxi.session.turn.waiting', created.data.turn_id, 30_000);
      return { sessionId: session.id, turnId: created.data.turn_id, stream, waitpoint: waiting.data.waitpoint, model };
    }
    const resume = (turnId: string, waitpointId: string, answers: object[]) => ({ type: 'yuxi.session.input.resume', turn_id: turnId, waitpoint_id: waitpointId, response: { type: 'answer', answers } });

    it('accept: answers are checked against the requested schema (422 names the field), converted, and sent back to the server; the call completes', async () => {
      const { sessionId, turnId, stream, waitpoint } = await waitingTurn('Thanks, Ada.');
      assert.equal(waitpoint.kind, 'question');
      assert.equal(waitpoint.elicitation.mode, 'form');
      assert.equal(waitpoint.elicitation.call_id, 'e1');
      assert.equal(waitpoint.elicitation.server_label, 'everything');
      const ids = waitpoint.questions.map((q: any) => q.question_id);
      assert.equal(ids[0], 'action');
      assert.deepEqual(waitpoint.questions[0].options, ['accept', 'decline', 'cancel']);
      assert.ok(ids.includes('name') && ids.includes('check') && ids.includes('integer'), ids.join(','));
      assert.deepEqual(waitpoint.questions.find((q: any) => q.question_id === 'check').options, ['true', 'false']);
      assert.equal((await http(`${API}/sessions/${sessionId}`)).body.status, 'requires_action');

      const missingName = await postEvent(sessionId, resume(turnId, waitpoint.id, [{ question_id: 'action', answer: 'accept' }]));
      assert.equal(missingName.status, 422, missingName.text);
      assert.equal(missingName.body.error.code, 'waitpoint_incomplete');
      assert.match(missingName.text, /answers\.name/);
      const notAnInteger = await postEvent(sessionId, resume(turnId, waitpoint.id, [{ question_id: 'action', answer: 'accept' }, { question_id: 'name', answer: 'Ada' }, { question_id: 'integer', answer: 'seven' }]));
      assert.equal(notAnInteger.status, 422);
      assert.match(notAnInteger.text, /answers\.integer/);

      const accepted = await postEvent(
        sessionId,
        resume(turnId, waitpoint.id, [
          { question_id: 'action', answer: 'accept' },
          { question_id: 'name', answer: 'Ada' },
          { question_id: 'check', answer: 'true' },
          { question_id: 'integer', answer: '7' },
        ]),
      );
      assert.equal(accepted.status, 202, accepted.text);
      await stream.waitForType('agent.session.turn.completed', turnId, 30_000);
      const [result] = await outputs(sessionId, turnId);
      assert.equal(result.yuxi.success, true);
      assert.match(result.output, /Name: Ada/);
      const sent = server.messages.find((m) => m.method === undefined && (m.result as any)?.content?.name === 'Ada');
      assert.ok(sent, 'the elicitation result reached the server');
      assert.equal((sent!.result as any).action, 'accept');
      assert.equal((sent!.result as any).content.integer, 7, 'converted to the schema\'s type');
      assert.equal((sent!.result as any).content.check, true);
    });

    it('decline: the server hears decline and the tool says so', async () => {
      const { sessionId, turnId, stream, waitpoint } = await waitingTurn('Declined.');
      const declined = await postEvent(sessionId, resume(turnId, waitpoint.id, [{ question_id: 'action', answer: 'decline' }]));
      assert.equal(declined.status, 202, declined.text);
      await stream.waitForType('agent.session.turn.completed', turnId, 30_000);
      const [result] = await outputs(sessionId, turnId);
      assert.match(result.output, /decline/i);
    });

    it('a turn cancelled at the elicitation waitpoint abandons the held call: the server hears notifications/cancelled', async () => {
      const { sessionId, turnId, stream } = await waitingTurn('never');
      const call = server.messages.find((m) => m.method === 'tools/call' && (m.params?._meta as any)?.idempotency_key === `${turnId}:e1`);
      assert.ok(call, 'the harness saw the tools/call');
      assert.equal((await postEvent(sessionId, { type: 'agent.session.input.cancel' })).status, 202);
      await stream.waitForType('agent.session.turn.cancelled', turnId, 15_000);
      const notice = await until(async () => server.messages.find((m) => m.method === 'notifications/cancelled' && m.sessionId === call.sessionId && m.params?.requestId === call.id), { attempts: 100, intervalMs: 100 });
      assert.ok(notice, `notifications/cancelled for request ${String(call.id)}`);
    });

    it('the server restarts while the user thinks: the model is told the outcome is unknown and the turn completes', async () => {
      const { sessionId, turnId, stream, waitpoint, model } = await waitingTurn('I could not tell.');
      await server.restart();
      const answered = await postEvent(sessionId, resume(turnId, waitpoint.id, [{ question_id: 'action', answer: 'accept' }, { question_id: 'name', answer: 'Bo' }]));
      assert.equal(answered.status, 202, answered.text);
      await stream.waitForType('agent.session.turn.completed', turnId, 30_000);
      const [result] = await outputs(sessionId, turnId);
      assert.equal(result.yuxi.success, false);
      assert.match(result.output, /^outcome_unknown/);
      const last = fake.requests(fakeModel(model)).at(-1) as any;
      assert.ok(last.messages.some((m: any) => m.role === 'tool' && /outcome_unknown/.test(m.content)), 'the model read it');
    });
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
