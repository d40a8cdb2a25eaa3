import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { useFakeOpenAi } from '../support/fake-openai-suite.js';
import { API, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { type SseEvent, SseStream } from '../support/sse.js';

// Context management end to end (README "Context and compaction"): sessions longer than the
// model's window keep every message readable, compact as committed steps, and tell the client.
describe('context compaction', () => {
  const openAi = useFakeOpenAi();

  const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);
  const ends = (stream: SseStream): SseEvent[] => stream.events.filter((e) => TERMINAL.has(e.type));
  /** The n-th turn of the session to end (1-based). */
  const nthEnd = (stream: SseStream, n: number, timeoutMs = 20_000): Promise<SseEvent> =>
    stream.waitFor((e) => TERMINAL.has(e.type) && ends(stream).length >= n, timeoutMs).then(() => ends(stream)[n - 1]!);
  const open = (sessionId: string): Promise<SseStream> => openAi.open(sessionId);
  const allItems = async (sessionId: string): Promise<any[]> => {
    const items: any[] = [];
    let after: string | undefined;
    for (let page = 0; page < 20; page += 1) {
      const res = await http(`${API}/sessions/${sessionId}/items?order=asc&limit=100${after ? `&after=${after}` : ''}`);
      items.push(...res.body.data);
      if (!res.body.has_more) return items;
      after = res.body.last_id;
    }
    throw new Error('too many item pages');
  };
  /** A user message of about 60 tokens whose first words name it. */
  const message = (n: number): string => `Message ${n}: ${'please keep track of this support conversation detail carefully '.repeat(6).trim()}`;

  it('keeps a 40-message session going past a small window: every turn completes, history stays readable, the summary carries message 1', async () => {
    const { id, model } = await putAgent({
      instructions: 'You are a support agent for ACME.',
      context: { window_tokens: 2048, compaction: { model: 'scripted:summary' } },
    });
    openAi.fake.script(fakeModel(model), Array.from({ length: 40 }, () => ({ text: 'Noted, thanks.' })));
    const first = 'My order number is 4711-XK and the parcel never arrived.';
    const session = await createSessionWith(id, first);
    const stream = await open(session.id);
    await nthEnd(stream, 1);
    for (let n = 2; n <= 40; n += 1) {
      assert.equal((await sendMessage(session.id, message(n))).status, 202);
      const end = await nthEnd(stream, n);
      assert.equal(end.type, 'agent.session.turn.completed', `turn ${n}: ${JSON.stringify(end.data.turn?.error)}`);
    }

    const items = await allItems(session.id);
    const users = items.filter((item) => item.type === 'message' && item.role === 'user');
    assert.equal(users.length, 40, 'every user message stays readable');
    assert.equal(users[0].content[0].text, first);
    const compactions = items.filter((item) => item.type === 'compaction');
    assert.ok(compactions.length >= 1, 'the session was compacted');
    for (const compaction of compactions) {
      assert.equal(compaction.yuxi.trigger, 'auto');
      assert.equal(compaction.yuxi.model, 'scripted:summary');
      assert.ok(compaction.yuxi.tokens_after < compaction.yuxi.tokens_before, 'a compaction shrinks the context');
      assert.ok(items.some((item) => item.id === compaction.yuxi.through_item_id), 'the summarised items stay readable');
    }
    const completed = stream.events.filter((e) => e.type === 'yuxi.session.turn.context_compression' && e.data.phase === 'completed');
    assert.deepEqual(
      completed.map((e) => e.data.item.id),
      compactions.map((c) => c.id),
      'each compaction is announced with its item',
    );
    assert.ok(stream.events.some((e) => e.type === 'yuxi.session.turn.context_compression' && e.data.phase === 'started' && e.data.trigger === 'auto'));

    // The last model request: the instructions, the summary (with a fact of message 1), the latest message verbatim.
    const requests = openAi.fake.requests(fakeModel(model)) as any[];
    const last = requests.at(-1);
    assert.deepEqual(last.messages[0], { role: 'system', content: 'You are a support agent for ACME.' });
    assert.match(last.messages[1].content, /Summary of the earlier conversation/);
    assert.match(last.messages[1].content, /4711-XK/);
    assert.deepEqual(last.messages.at(-1), { role: 'user', content: message(40) });
    assert.ok(last.messages.length < 2 * 40, 'the request holds the summary and recent items, not the whole history');

    // The turn and /state show the context and its boundary.
    const state = (await http(`${API}/sessions/${session.id}/state`)).body;
    assert.equal(state.context.window_tokens, 2048);
    assert.equal(state.context.compaction_item_id, compactions.at(-1).id);
    assert.ok(state.context.tokens > 0 && state.context.tokens <= 2048);
    const lastTurn = (await http(`${API}/sessions/${session.id}/turns/${ends(stream).at(-1)!.data.turn_id}`)).body;
    assert.deepEqual(lastTurn.yuxi.context, state.context);
    // The summary's tokens count in the usage of the turn that compacted.
    const compactedTurn = (await http(`${API}/sessions/${session.id}/turns/${compactions[0].yuxi.turn_id}`)).body;
    assert.ok(compactedTurn.yuxi.usage.input_tokens >= compactions[0].yuxi.usage.input_tokens + 1);
  });

  it('compacts on request: a turn of its own when idle, queued behind a waiting turn when busy, once per Idempotency-Key', async () => {
    const { id } = await putAgent({ model: 'scripted:echo', instructions: 'Echo.', tools: [{ type: 'builtin', name: 'ask_user' }], context: { compaction: { mode: 'manual' } } });
    const session = await createSessionWith(id, 'the invoice id is INV-99');
    const stream = await open(session.id);
    await nthEnd(stream, 1);
    assert.equal((await sendMessage(session.id, 'second message')).status, 202);
    await nthEnd(stream, 2);

    // Idle: its own turn, whose only output is the compaction item.
    const key = newKey('compact');
    const accepted = await postEvent(session.id, { type: 'yuxi.session.input.compact', instructions: 'Keep invoice ids.' }, key);
    assert.equal(accepted.status, 202);
    const done = await nthEnd(stream, 3);
    assert.equal(done.type, 'agent.session.turn.completed');
    const turnItems = (await http(`${API}/sessions/${session.id}/turns/${done.data.turn_id}/items?order=asc`)).body.data;
    assert.deepEqual(
      turnItems.map((item: any) => item.type),
      ['compaction'],
    );
    assert.equal(turnItems[0].yuxi.trigger, 'manual');
    assert.match(turnItems[0].summary, /INV-99/);
    assert.equal(turnItems[0].yuxi.first_kept_item_id, null);
    const replay = await postEvent(session.id, { type: 'yuxi.session.input.compact', instructions: 'Keep invoice ids.' }, key);
    assert.equal(replay.body.input_id, accepted.body.input_id, 'a replay answers the same receipt');

    // The next turn's model sees the summary, and the echo answers the new message.
    assert.equal((await sendMessage(session.id, 'after compaction')).status, 202);
    const next = await nthEnd(stream, 4);
    assert.equal(next.type, 'agent.session.turn.completed');

    // Busy: behind a turn waiting for an answer, FIFO.
    assert.equal((await sendMessage(session.id, 'needs input [[ask:Which one?]]')).status, 202);
    const waiting = await stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && ends(stream).length === 4);
    const queued = await postEvent(session.id, { type: 'yuxi.session.input.compact' });
    assert.equal(queued.status, 202);
    const queue = (await http(`${API}/sessions/${session.id}/queue`)).body;
    assert.deepEqual(
      queue.data.map((input: any) => [input.id, input.kind]),
      [[queued.body.input_id, 'compact']],
    );
    const promote = await postEvent(session.id, { type: 'yuxi.session.input.promote', input_id: queued.body.input_id });
    assert.equal(promote.status, 409, 'nothing is promoted into a turn waiting for an answer');
    assert.equal(promote.body.error.code, 'turn_requires_action');
    const questionId = waiting.data.waitpoint.questions[0].question_id;
    const resume = {
      type: 'yuxi.session.input.resume',
      turn_id: waiting.data.turn_id,
      waitpoint_id: waiting.data.waitpoint.id,
      response: { type: 'answer', answers: [{ question_id: questionId, answer: 'the first' }] },
    };
    assert.equal((await postEvent(session.id, resume)).status, 202);
    assert.equal((await nthEnd(stream, 5)).type, 'agent.session.turn.completed');
    const compactTurn = await nthEnd(stream, 6);
    assert.equal(compactTurn.type, 'agent.session.turn.completed');
    const items = await allItems(session.id);
    assert.equal(items.filter((item) => item.type === 'compaction').length, 2, 'one compaction per request, the replay added none');
    assert.equal(items.at(-1).type, 'compaction');
    assert.equal(items.at(-1).yuxi.turn_id, compactTurn.data.turn_id);
  });

  it('recovers from a provider context-length error: compacts once and retries the call', async () => {
    const { id, model } = await putAgent({ instructions: 'Be brief.', context: { window_tokens: 100_000, compaction: { model: 'scripted:summary' } } });
    const name = fakeModel(model);
    openAi.fake.window(name, 900);
    const session = await createSessionWith(id, 'The contract number is C-31337.');
    const stream = await open(session.id);
    await nthEnd(stream, 1);
    let n = 1;
    // Grow the history until the provider refuses it (bounded: 900 tokens is about 14 of these messages).
    while (!stream.events.some((e) => e.type === 'yuxi.session.turn.context_compression') && n < 30) {
      n += 1;
      assert.equal((await sendMessage(session.id, message(n))).status, 202);
      const end = await nthEnd(stream, n);
      assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn.error));
    }
    const compaction = stream.events.find((e) => e.type === 'yuxi.session.turn.context_compression' && e.data.phase === 'completed');
    assert.ok(compaction, 'an overflow compacted the context');
    assert.equal(compaction.data.item.yuxi.trigger, 'overflow');
    const requests = openAi.fake.requests(name) as any[];
    // The refused request, then the retry after the compaction, which fits and carries the summary.
    const retry = requests.at(-1);
    assert.match(retry.messages[1].content, /C-31337/);
    assert.deepEqual(retry.messages.at(-1), { role: 'user', content: message(n) });
  });

  it('fails a turn whose message alone is larger than the window with context_window_exceeded, and the next message works', async () => {
    const { id } = await putAgent({ model: 'scripted:echo', context: { window_tokens: 1024 } });
    const session = await createSessionWith(id, 'hello');
    const stream = await open(session.id);
    await nthEnd(stream, 1);
    assert.equal((await sendMessage(session.id, 'word '.repeat(3000))).status, 202);
    const failed = await nthEnd(stream, 2);
    assert.equal(failed.type, 'agent.session.turn.failed');
    assert.equal(failed.data.turn.error.code, 'context_window_exceeded');
    assert.ok(!stream.events.some((e) => e.type === 'yuxi.session.turn.context_compression'), 'nothing to gain: no compaction was tried');
    // A failed turn pauses the queue behind it; with nothing queued the next message runs.
    assert.equal((await sendMessage(session.id, 'small again')).status, 202);
    const next = await nthEnd(stream, 3);
    assert.equal(next.type, 'agent.session.turn.completed', JSON.stringify(next.data.turn.error));
  });

  it('with compaction off for the session, a context past the window fails the turn instead of being compacted', async () => {
    const { id, model } = await putAgent({ context: { window_tokens: 1024 } });
    const session = await createSessionWith(id);
    const updated = await http(`${API}/sessions/${session.id}`, { method: 'POST', body: { yuxi: { compaction_mode: 'off' } } });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.yuxi.compaction_mode, 'off');
    const stream = await open(session.id);
    let n = 0;
    let last: SseEvent | undefined;
    while (n < 30) {
      n += 1;
      assert.equal((await sendMessage(session.id, message(n))).status, 202);
      last = await nthEnd(stream, n);
      if (last.type !== 'agent.session.turn.completed') break;
    }
    assert.equal(last?.type, 'agent.session.turn.failed');
    assert.equal(last?.data.turn.error.code, 'context_window_exceeded');
    assert.match(last?.data.turn.error.message, /compaction is off/);
    assert.ok(n > 5, 'earlier turns fit and completed');
    assert.equal((await allItems(session.id)).filter((item) => item.type === 'compaction').length, 0);
    assert.ok((openAi.fake.requests(fakeModel(model)) as any[]).length === n - 1, 'the turn that did not fit was never sent');
  });

  it('refuses a malformed compaction request or compaction mode with a 422, and queues nothing', async () => {
    const session = await createSessionWith('default-chatbot');
    for (const event of [
      { type: 'yuxi.session.input.compact', instructions: 5 },
      { type: 'yuxi.session.input.compact', instructions: '' },
      { type: 'yuxi.session.input.compact', instructions: null },
      { type: 'yuxi.session.input.compact', extra: true },
    ]) {
      const res = await postEvent(session.id, event);
      assert.equal(res.status, 422, JSON.stringify(event));
      assert.equal(res.body.error.code, 'validation_failed');
    }
    for (const mode of ['sometimes', null, 3]) {
      const res = await http(`${API}/sessions/${session.id}`, { method: 'POST', body: { yuxi: { compaction_mode: mode } } });
      assert.equal(res.status, 422, String(mode));
    }
    assert.deepEqual((await http(`${API}/sessions/${session.id}/queue`)).body.data, []);
    assert.equal((await http(`${API}/sessions/${session.id}`)).body.yuxi.compaction_mode, null);
  });

  it('refuses an invalid context policy with every problem named', async () => {
    const res = await http('/api/v1/admin/agents/t-bad-context', {
      method: 'PUT',
      body: { name: 'Bad', context: { window_tokens: 10, compaction: { mode: 'sometimes', threshold: 2, model: 'nope:x', extra: 1 } } },
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.code, 'invalid_agent');
    const fields = res.body.error.details.fields.map((f: any) => f.field).sort();
    // The unknown summariser model too, though the rest of the definition does not parse.
    assert.deepEqual(fields, ['context.compaction.extra', 'context.compaction.mode', 'context.compaction.model', 'context.compaction.threshold', 'context.window_tokens']);
  });
});
