import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { useFakeOpenAi } from '../support/fake-openai-suite.js';
import { PNG } from '../support/files.js';
import { API, http, newKey, postEvent, sendMessage } from '../support/http.js';
import type { SseEvent, SseStream } from '../support/sse.js';

// The model context of a fork (README "Fork"): a fork copies no history, yet its model's next
// request carries exactly what the source's model saw up to the fork point (compaction included,
// inline images included), then the fork's own turns. What the fake OpenAI server received is
// the judge: a fork's request equals the source's request at that point.
describe('the model context of a fork', () => {
  const openAi = useFakeOpenAi();

  const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);
  const ends = (stream: SseStream): SseEvent[] => stream.events.filter((e) => TERMINAL.has(e.type));
  /** The n-th turn of the session to end (1-based); it must have completed. */
  const nthEnd = async (stream: SseStream, n: number): Promise<SseEvent> => {
    await stream.waitFor((e) => TERMINAL.has(e.type) && ends(stream).length >= n, 30_000);
    const end = ends(stream)[n - 1]!;
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));
    return end;
  };

  /** A conversation on one fake model: each turn scripted with its reply, and the request the model received for it. */
  function conversation(model: string) {
    const name = fakeModel(model);
    const streams = new Map<string, SseStream>();
    const stream = async (sessionId: string): Promise<SseStream> => {
      if (!streams.has(sessionId)) streams.set(sessionId, await openAi.open(sessionId));
      return streams.get(sessionId)!;
    };
    return {
      /** Sends the message, waits for its turn; the model's request and the turn id. */
      async turn(sessionId: string, text: string, reply: string): Promise<{ request: any; turnId: string }> {
        const events = await stream(sessionId);
        const before = ends(events).length;
        const sent = openAi.fake.requests(name).length;
        openAi.fake.script(name, [{ text: reply }]);
        assert.equal((await sendMessage(sessionId, text)).status, 202);
        const end = await nthEnd(events, before + 1);
        const requests = openAi.fake.requests(name);
        assert.equal(requests.length, sent + 1, 'one model call per turn');
        return { request: requests.at(-1), turnId: end.data.turn_id };
      },
      /** The session's first turn (created with its input). */
      async first(sessionId: string): Promise<{ request: any; turnId: string }> {
        const end = await nthEnd(await stream(sessionId), 1);
        return { request: openAi.fake.requests(name).at(-1), turnId: end.data.turn_id };
      },
      async compact(sessionId: string): Promise<string> {
        const events = await stream(sessionId);
        const before = ends(events).length;
        assert.equal((await postEvent(sessionId, { type: 'yuxi.session.input.compact' })).status, 202);
        return (await nthEnd(events, before + 1)).data.turn_id;
      },
    };
  }

  async function fork(sessionId: string, body: Record<string, unknown> = {}): Promise<string> {
    const res = await http(`${API}/sessions/${sessionId}/fork`, { body, idempotencyKey: newKey('fork') });
    assert.equal(res.status, 201, res.text);
    return res.body.id as string;
  }

  const user = (text: string) => ({ role: 'user', content: text });
  /** The request's messages without the last one (the new user message), and that one. */
  const split = (request: any): { context: any[]; last: any } => ({ context: request.messages.slice(0, -1), last: request.messages.at(-1) });

  it('after a turn: the request is the source\'s request at the next turn; before a turn (edit and resend): it lacks the edited-away message', async () => {
    const { id, model } = await putAgent({ instructions: 'Be brief.' });
    openAi.fake.script(fakeModel(model), [{ text: 'reply one' }]);
    const talk = conversation(model);
    const source = await createSessionWith(id, 'one');
    const t1 = await talk.first(source.id);
    const t2 = await talk.turn(source.id, 'two', 'reply two');
    const t3 = await talk.turn(source.id, 'three', 'reply three');
    assert.deepEqual(t3.request.messages.map((m: any) => m.content), ['Be brief.', 'one', 'reply one', 'two', 'reply two', 'three']);

    // After turn 2, the same message: the very request the source's model received at turn 3.
    const after = await fork(source.id, { after_turn_id: t2.turnId });
    const afterTurn = await talk.turn(after, 'three', 'reply three, again');
    assert.deepEqual(afterTurn.request.messages, t3.request.messages);
    // The fork's next turn (its context now cached by the worker) adds its own turn and nothing of the source's turn 3.
    const afterNext = await talk.turn(after, 'four', 'reply four');
    assert.deepEqual(afterNext.request.messages.map((m: any) => m.content), ['Be brief.', 'one', 'reply one', 'two', 'reply two', 'three', 'reply three, again', 'four']);

    // Before turn 3: the context ends with turn 2, the edited message replaces 'three'.
    const before = await fork(source.id, { before_turn_id: t3.turnId });
    const edited = await talk.turn(before, 'three, edited', 'reply edited');
    assert.deepEqual(split(edited.request).context, split(t3.request).context);
    assert.deepEqual(split(edited.request).last, user('three, edited'));
    assert.ok(!edited.request.messages.some((m: any) => m.content === 'three'), 'the edited-away message is not sent');

    // Neither id: the latest finished turn. The fork and the source then send the same request.
    const latest = await fork(source.id);
    const forked = await talk.turn(latest, 'four', 'reply four');
    const continued = await talk.turn(source.id, 'four', 'reply four');
    assert.deepEqual(forked.request.messages, continued.request.messages);
    assert.deepEqual(t1.request.messages.map((m: any) => m.content), ['Be brief.', 'one']);
  });

  it('a fork of a compacted session opens with the summary; a fork before the compaction does not see it', async () => {
    const { id, model } = await putAgent({ instructions: 'Be brief.', context: { compaction: { mode: 'manual', model: 'scripted:summary' } } });
    openAi.fake.script(fakeModel(model), [{ text: 'Noted.' }]);
    const talk = conversation(model);
    const source = await createSessionWith(id, 'The order number is 4711-XK.');
    await talk.first(source.id);
    const t2 = await talk.turn(source.id, 'The parcel never arrived.', 'Sorry to hear.');
    const compaction = await talk.compact(source.id);
    const t4 = await talk.turn(source.id, 'after compaction', 'Still here.');
    const [system, summary] = t4.request.messages;
    assert.match(summary.content, /Summary of the earlier conversation/);
    assert.match(summary.content, /4711-XK/);
    assert.deepEqual(t4.request.messages, [system, summary, user('after compaction')]);

    // After the compaction turn itself: the summary, then the fork's own message, as the source's turn 4.
    const atCompaction = await fork(source.id, { after_turn_id: compaction });
    assert.deepEqual((await talk.turn(atCompaction, 'after compaction', 'Still here.')).request.messages, t4.request.messages);

    // After turn 4: the summary and the kept items follow, then the new message.
    const afterwards = await fork(source.id, { after_turn_id: t4.turnId });
    const forked = await talk.turn(afterwards, 'in the fork', 'Forked.');
    assert.deepEqual(forked.request.messages.slice(0, 2), [system, summary]);
    assert.deepEqual(
      forked.request.messages.slice(2).map((m: any) => [m.role, m.content]),
      [['user', 'after compaction'], ['assistant', 'Still here.'], ['user', 'in the fork']],
    );

    // The fork's own compaction summarises the inherited summary and its own turns, and wins over the inherited one.
    await talk.compact(afterwards);
    const own = await talk.turn(afterwards, 'after the fork compacted', 'Compacted too.');
    const [, ownSummary] = own.request.messages;
    assert.notEqual(ownSummary.content, summary.content);
    assert.match(ownSummary.content, /4711-XK/);
    assert.match(ownSummary.content, /in the fork/);
    assert.deepEqual(own.request.messages, [system, ownSummary, user('after the fork compacted')]);

    // After turn 2, which precedes the compaction: the whole history, no summary.
    const earlier = await fork(source.id, { after_turn_id: t2.turnId });
    const plain = await talk.turn(earlier, 'before it all', 'Plain.');
    assert.deepEqual(
      plain.request.messages.map((m: any) => m.content),
      ['Be brief.', 'The order number is 4711-XK.', 'Noted.', 'The parcel never arrived.', 'Sorry to hear.', 'before it all'],
    );
  });

  it('a fork of a fork holds both segments in order, and a fork of its inherited turn holds only the source\'s', async () => {
    const { id, model } = await putAgent({ instructions: 'Be brief.' });
    openAi.fake.script(fakeModel(model), [{ text: 's1 reply' }]);
    const talk = conversation(model);
    const source = await createSessionWith(id, 's1');
    const s1 = await talk.first(source.id);
    const s2 = await talk.turn(source.id, 's2', 's2 reply');
    await talk.turn(source.id, 's3', 's3 reply');

    const child = await fork(source.id, { after_turn_id: s2.turnId });
    const c1 = await talk.turn(child, 'c1', 'c1 reply');
    await talk.turn(child, 'c2', 'c2 reply');
    await talk.turn(source.id, 's4', 's4 reply');

    const grandchild = await fork(child, { after_turn_id: c1.turnId });
    const g1 = await talk.turn(grandchild, 'g1', 'g1 reply');
    assert.deepEqual(g1.request.messages.map((m: any) => m.content), ['Be brief.', 's1', 's1 reply', 's2', 's2 reply', 'c1', 'c1 reply', 'g1']);

    const ofInherited = await fork(child, { after_turn_id: s1.turnId });
    const i1 = await talk.turn(ofInherited, 'i1', 'i1 reply');
    assert.deepEqual(i1.request.messages.map((m: any) => m.content), ['Be brief.', 's1', 's1 reply', 'i1']);
  });

  it('an inline image of an inherited message reaches the model, also after the source is deleted', async () => {
    const { id, model } = await putAgent({ instructions: 'Describe images.' });
    openAi.fake.script(fakeModel(model), [{ text: 'A tiny picture.' }]);
    const talk = conversation(model);
    const image = `data:image/png;base64,${PNG.toString('base64')}`;
    const source = await createSessionWith(id, [{ role: 'user', content: [{ type: 'input_text', text: 'what is this?' }, { type: 'input_image', image_url: image }] }]);
    const first = await talk.first(source.id);
    const sent = first.request.messages[1];
    assert.ok(JSON.stringify(sent).includes(image), 'the source sent the image');

    const forkId = await fork(source.id);
    const forked = await talk.turn(forkId, 'and the colour?', 'White.');
    assert.deepEqual(forked.request.messages[1], sent, 'the inherited message carries the image bytes');
    assert.ok(!JSON.stringify(forked.request.messages).includes('image no longer available'));

    assert.equal((await http(`${API}/sessions/${source.id}`, { method: 'DELETE' })).status, 200);
    const afterDelete = await talk.turn(forkId, 'and its size?', 'Small.');
    assert.deepEqual(afterDelete.request.messages[1], sent, 'deleting the source keeps the fork\'s inherited image');
  });
});
