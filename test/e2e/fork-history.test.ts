import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createSessionWith, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { PNG } from '../support/files.js';
import { API, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { ADMIN, bootstrap, call } from '../support/identity.js';
import { type SseEvent, SseStream } from '../support/sse.js';

// A fork's history read through its lineage (README "Fork"): the inherited items and turns are the
// source's own rows up to the fork point, listed, paged and read by id through the fork, and they
// never change afterwards, whatever the source does (more turns, compaction, delete).

const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);

describe('fork history', () => {
  let agentId: string;
  const streams: SseStream[] = [];

  before(async () => {
    // A scripted echo with manual compaction: the source can be compacted on request after the fork.
    agentId = (await putAgent({ model: 'scripted:echo', instructions: 'Echo.', context: { compaction: { mode: 'manual' } } })).id;
  });
  after(() => {
    for (const stream of streams) stream.close();
  });

  async function open(sessionId: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    return stream;
  }
  const ends = (stream: SseStream): SseEvent[] => stream.events.filter((e) => TERMINAL.has(e.type));
  /** Waits until the session's n-th turn ended (1-based). */
  async function ended(stream: SseStream, n: number): Promise<SseEvent> {
    await stream.waitFor((e) => TERMINAL.has(e.type) && ends(stream).length >= n, 30_000);
    return ends(stream)[n - 1]!;
  }

  /** A session of `count` finished turns (messages m1, m2, …), with its stream. */
  async function sessionOfTurns(count: number, first: unknown = 'm1'): Promise<{ id: string; stream: SseStream }> {
    const session = await createSessionWith(agentId, first);
    const stream = await open(session.id);
    await ended(stream, 1);
    for (let n = 2; n <= count; n += 1) {
      assert.equal((await sendMessage(session.id, `m${n}`)).status, 202);
      await ended(stream, n);
    }
    return { id: session.id, stream };
  }

  async function fork(sessionId: string, body: Record<string, unknown> = {}): Promise<any> {
    const res = await http(`${API}/sessions/${sessionId}/fork`, { body, idempotencyKey: newKey('fork') });
    assert.equal(res.status, 201, res.text);
    return res.body;
  }

  /** Every entry of a list (`items` or `turns`), walked with pages of `limit` in `order`. */
  async function walk(sessionId: string, list: string, order: 'asc' | 'desc', limit = 100): Promise<any[]> {
    const all: any[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 200; page += 1) {
      const res = await http(`${API}/sessions/${sessionId}/${list}?order=${order}&limit=${limit}${cursor ? `&after=${cursor}` : ''}`);
      assert.equal(res.status, 200, res.text);
      assert.ok(res.body.data.length <= limit);
      all.push(...res.body.data);
      if (!res.body.has_more) return all;
      assert.equal(res.body.data.length, limit, 'a page before the last is full');
      cursor = res.body.last_id;
    }
    throw new Error('too many pages');
  }
  const ids = (rows: any[]): string[] => rows.map((row) => row.id);
  const get = async (path: string): Promise<any> => {
    const res = await http(path);
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    return res.body;
  };
  const status = async (path: string): Promise<number> => (await http(path)).status;

  /** Everything the fork shows of its history, as read through its own paths. */
  async function snapshot(sessionId: string): Promise<unknown> {
    const items = await walk(sessionId, 'items', 'asc');
    const turns = await walk(sessionId, 'turns', 'asc');
    const details = [];
    for (const turn of turns) {
      const detail = await get(`${API}/sessions/${sessionId}/turns/${turn.id}`);
      details.push(detail, await walk(sessionId, `turns/${turn.id}/items`, 'asc'));
      for (const run of detail.yuxi.runs) details.push(await get(`${API}/sessions/${sessionId}/runs/${run.id}`));
    }
    return { items, turns, details };
  }

  it('a fork after turn 2 of 4 lists the source\'s first items (same ids, same order), then its own, in pages of any size both ways', async () => {
    const source = await sessionOfTurns(4);
    const turns = await walk(source.id, 'turns', 'asc');
    assert.equal(turns.length, 4);
    const sourceItems = await walk(source.id, 'items', 'asc');
    const inherited = sourceItems.filter((item) => item.yuxi.turn_id === turns[0].id || item.yuxi.turn_id === turns[1].id);
    assert.ok(inherited.length >= 4, 'two turns of a message and an answer each');

    const forked = await fork(source.id, { after_turn_id: turns[1].id });
    assert.deepEqual(forked.yuxi.forked_from, { session_id: source.id, turn_id: turns[1].id, position: 'after' });
    assert.deepEqual(await walk(forked.id, 'items', 'asc'), inherited, 'the inherited items, as the source shows them');
    assert.deepEqual(await walk(forked.id, 'items', 'desc'), [...inherited].reverse());

    const stream = await open(forked.id);
    assert.equal((await sendMessage(forked.id, 'own message')).status, 202);
    await ended(stream, 1);
    const all = await walk(forked.id, 'items', 'asc');
    assert.deepEqual(all.slice(0, inherited.length), inherited);
    const own = all.slice(inherited.length);
    assert.ok(own.length >= 2, 'its own message and answer follow');
    assert.deepEqual(own[0].content, [{ type: 'input_text', text: 'own message' }]);
    assert.ok(own.every((item) => !sourceItems.some((s) => s.id === item.id)));

    // Every page size, both ways, crosses from the inherited part into the own part exactly once.
    for (let limit = 1; limit <= 5; limit += 1) {
      assert.deepEqual(ids(await walk(forked.id, 'items', 'asc', limit)), ids(all), `asc, pages of ${limit}`);
      assert.deepEqual(ids(await walk(forked.id, 'items', 'desc', limit)), ids(all).reverse(), `desc, pages of ${limit}`);
    }

    // A source item after the fork point is not one of the fork's: its cursor is refused.
    const later = sourceItems.find((item) => item.yuxi.turn_id === turns[2].id);
    for (const order of ['asc', 'desc']) {
      const res = await http(`${API}/sessions/${forked.id}/items?order=${order}&after=${later.id}`);
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.code, 'invalid_cursor');
    }
    const turnCursor = await http(`${API}/sessions/${forked.id}/turns?after=${turns[2].id}`);
    assert.equal(turnCursor.status, 400);
    assert.equal(turnCursor.body.error.code, 'invalid_cursor');
    // The source shows none of the fork's items, and its history is unchanged.
    assert.deepEqual(await walk(source.id, 'items', 'asc'), sourceItems);
  });

  it('inherited turns, their items and runs read through the fork as on the source; later ones and inputs are not found', async () => {
    const source = await sessionOfTurns(3);
    const turns = await walk(source.id, 'turns', 'asc');
    const forked = await fork(source.id, { after_turn_id: turns[1].id });
    const stream = await open(forked.id);
    assert.equal((await sendMessage(forked.id, 'own')).status, 202);
    const ownEnd = await ended(stream, 1);

    const forkTurns = await walk(forked.id, 'turns', 'asc');
    assert.deepEqual(ids(forkTurns), [turns[0].id, turns[1].id, ownEnd.data.turn_id]);
    assert.deepEqual(forkTurns.slice(0, 2), turns.slice(0, 2), 'an inherited turn keeps the session that ran it');
    assert.deepEqual(ids(await walk(forked.id, 'turns', 'desc', 1)), ids(forkTurns).reverse());
    for (const turn of turns.slice(0, 2)) {
      const detail = await get(`${API}/sessions/${source.id}/turns/${turn.id}`);
      assert.deepEqual(await get(`${API}/sessions/${forked.id}/turns/${turn.id}`), detail);
      assert.deepEqual(await walk(forked.id, `turns/${turn.id}/items`, 'asc', 1), await walk(source.id, `turns/${turn.id}/items`, 'asc'));
      for (const run of detail.yuxi.runs) assert.deepEqual(await get(`${API}/sessions/${forked.id}/runs/${run.id}`), await get(`${API}/sessions/${source.id}/runs/${run.id}`));
    }
    // The turn after the fork point, its items and runs: the fork does not show them.
    const third = await get(`${API}/sessions/${source.id}/turns/${turns[2].id}`);
    assert.equal(await status(`${API}/sessions/${forked.id}/turns/${turns[2].id}`), 404);
    assert.equal(await status(`${API}/sessions/${forked.id}/turns/${turns[2].id}/items`), 404);
    for (const run of third.yuxi.runs) assert.equal(await status(`${API}/sessions/${forked.id}/runs/${run.id}`), 404);
    // An inherited message's input is the source's: readable there only.
    const firstMessage = (await walk(forked.id, 'items', 'asc')).find((item) => item.yuxi.input_id !== null);
    assert.ok(firstMessage.yuxi.received_at > 0, 'received_at comes from the source\'s input');
    assert.equal(await status(`${API}/sessions/${forked.id}/inputs/${firstMessage.yuxi.input_id}`), 404);
    assert.equal(await status(`${API}/sessions/${source.id}/inputs/${firstMessage.yuxi.input_id}`), 200);
    // The fork's own turns are not the source's.
    assert.equal(await status(`${API}/sessions/${source.id}/turns/${ownEnd.data.turn_id}`), 404);
    // The operator timeline of the fork follows the same lineage, with the inherited turns' runs.
    const timeline = await call(bootstrap, `${ADMIN}/sessions/${forked.id}/timeline?order=asc`);
    assert.equal(timeline.status, 200, timeline.text);
    assert.deepEqual(timeline.body.data.map((turn: any) => turn.id), ids(forkTurns));
    assert.ok(timeline.body.data[0].runs.length >= 1, 'an inherited turn shows its runs');
  });

  it('a fork before a turn (edit and resend) inherits the turns before it only', async () => {
    const source = await sessionOfTurns(3);
    const turns = await walk(source.id, 'turns', 'asc');
    const sourceItems = await walk(source.id, 'items', 'asc');
    const forked = await fork(source.id, { before_turn_id: turns[2].id });
    assert.deepEqual(forked.yuxi.forked_from, { session_id: source.id, turn_id: turns[2].id, position: 'before' });
    assert.deepEqual(
      await walk(forked.id, 'items', 'asc', 2),
      sourceItems.filter((item) => item.yuxi.turn_id !== turns[2].id),
    );
    assert.deepEqual(ids(await walk(forked.id, 'turns', 'asc')), [turns[0].id, turns[1].id]);
    const stream = await open(forked.id);
    assert.equal((await sendMessage(forked.id, 'm3, edited')).status, 202);
    await ended(stream, 1);
    const items = await walk(forked.id, 'items', 'desc', 3);
    assert.deepEqual(items.at(-1)?.id, sourceItems[0].id);
    assert.ok(items.some((item) => item.content?.[0]?.text === 'm3, edited'));
    assert.ok(!items.some((item) => item.yuxi.turn_id === turns[2].id));
  });

  it('a fork\'s history never changes: the source runs, compacts and is deleted, and a fork of the fork composes', async () => {
    const source = await sessionOfTurns(3);
    const turns = await walk(source.id, 'turns', 'asc');
    const forked = await fork(source.id, { after_turn_id: turns[1].id });
    const stream = await open(forked.id);
    assert.equal((await sendMessage(forked.id, 'own one')).status, 202);
    await ended(stream, 1);
    const frozen = await snapshot(forked.id);

    // A fork of the fork: after the fork's own turn (two segments: the fork and the source), and at an inherited turn (one).
    const forkItems = await walk(forked.id, 'items', 'asc');
    const grand = await fork(forked.id);
    assert.deepEqual(await walk(grand.id, 'items', 'asc', 2), forkItems);
    const atInherited = await fork(forked.id, { after_turn_id: turns[0].id });
    assert.deepEqual(await walk(atInherited.id, 'items', 'asc'), forkItems.filter((item) => item.yuxi.turn_id === turns[0].id));
    assert.deepEqual(ids(await walk(atInherited.id, 'turns', 'asc')), [turns[0].id]);
    const grandStream = await open(grand.id);
    assert.equal((await sendMessage(grand.id, 'grand own')).status, 202);
    await ended(grandStream, 1);
    const grandItems = await walk(grand.id, 'items', 'asc');
    assert.deepEqual(grandItems.slice(0, forkItems.length), forkItems);
    for (let limit = 1; limit <= 3; limit += 1) assert.deepEqual(ids(await walk(grand.id, 'items', 'desc', limit)), ids(grandItems).reverse());

    // The source goes on, compacts and is deleted.
    assert.equal((await sendMessage(source.id, 'm4')).status, 202);
    await ended(source.stream, 4);
    assert.equal((await postEvent(source.id, { type: 'yuxi.session.input.compact' })).status, 202);
    const compacted = await ended(source.stream, 5);
    assert.equal(compacted.type, 'agent.session.turn.completed');
    assert.deepEqual(await snapshot(forked.id), frozen, 'unchanged by the source\'s turns and compaction');
    assert.equal((await http(`${API}/sessions/${source.id}`, { method: 'DELETE' })).status, 200);
    assert.equal(await status(`${API}/sessions/${source.id}/items`), 404);
    assert.deepEqual(await snapshot(forked.id), frozen, 'unchanged by the source\'s deletion');
    assert.deepEqual((await walk(grand.id, 'items', 'asc')), grandItems);
  });

  it('inherited inline images are shown under the fork\'s path and still load after the source is deleted', async () => {
    const dataUrl = `data:image/png;base64,${PNG.toString('base64')}`;
    const source = await sessionOfTurns(2, [{ role: 'user', content: [{ type: 'input_text', text: 'look' }, { type: 'input_image', image_url: dataUrl }] }]);
    const sourceImage = (await walk(source.id, 'items', 'asc'))[0].content[1];
    assert.equal(sourceImage.image_url, `${API}/sessions/${source.id}/files/${sourceImage.file_id}/content`);
    const forked = await fork(source.id);
    // Before its first own model call, the fork's state shows the context it inherits.
    const context = (await get(`${API}/sessions/${source.id}/state`)).context;
    assert.ok(context !== null);
    assert.deepEqual((await get(`${API}/sessions/${forked.id}/state`)).context, context);
    const items = await walk(forked.id, 'items', 'asc');
    const image = items[0].content[1];
    assert.deepEqual(image, { ...sourceImage, image_url: `${API}/sessions/${forked.id}/files/${sourceImage.file_id}/content` });
    assert.deepEqual((await walk(forked.id, `turns/${items[0].yuxi.turn_id}/items`, 'asc'))[0].content[1], image);

    const bytes = async (url: string, token = env.apiKey): Promise<{ status: number; body: Buffer }> => {
      const res = await fetch(`${env.apiUrl}${url}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    };
    assert.deepEqual(await bytes(image.image_url), { status: 200, body: PNG });
    assert.equal((await bytes(`${API}/sessions/${forked.id}/files/${'0'.repeat(32)}/content`)).status, 404);
    assert.equal((await http(`${API}/sessions/${source.id}`, { method: 'DELETE' })).status, 200);
    assert.equal((await bytes(sourceImage.image_url)).status, 404, 'the source\'s path goes with the source');
    assert.deepEqual(await bytes(image.image_url), { status: 200, body: PNG }, 'the fork\'s path still serves it');
    assert.deepEqual((await walk(forked.id, 'items', 'asc'))[0].content[1], image);
  });
});
