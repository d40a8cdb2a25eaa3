import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { API, createSession, http, newKey } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { createUserKey } from '../support/users.js';

/** A follow-up message sent by `key`'s caller. */
async function sendAs(key: string, sessionId: string, text: string): Promise<void> {
  const res = await http(`${API}/sessions/${sessionId}/events`, {
    key,
    idempotencyKey: newKey('msg'),
    body: { events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text }] },
  });
  assert.equal(res.status, 202, res.text);
}

describe('list pagination', () => {
  let key: string;
  before(async () => {
    key = await createUserKey(`pager-${newKey()}`);
  });

  it('pages sessions by (created_at, id) in both orders without gaps or repeats', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await createSession(undefined, key)).id);

    const desc: string[] = [];
    let after: string | undefined;
    for (;;) {
      const res = await http(`${API}/sessions?limit=2${after ? `&after=${after}` : ''}`, { key });
      assert.equal(res.status, 200);
      desc.push(...res.body.data.map((s: any) => s.id));
      if (!res.body.has_more) break;
      after = res.body.last_id;
    }
    assert.deepEqual(desc, [...ids].reverse());

    const asc = await http(`${API}/sessions?limit=100&order=asc`, { key });
    assert.deepEqual(asc.body.data.map((s: any) => s.id), ids);
    assert.equal(asc.body.first_id, ids[0]);
    assert.equal(asc.body.last_id, ids.at(-1));
    assert.equal(asc.body.has_more, false);
  });

  it('keeps page boundaries when sessions are renamed, pinned or archived, and filters by agent', async () => {
    // A caller of its own: the list holds exactly these four sessions.
    const own = await createUserKey(`pager-boundary-${newKey()}`);
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) ids.push((await createSession(undefined, own)).id);
    const firstPage = await http(`${API}/sessions?limit=2&order=asc`, { key: own });
    assert.deepEqual(firstPage.body.data.map((s: any) => s.id), ids.slice(0, 2));
    assert.equal(firstPage.body.has_more, true);
    const boundary = firstPage.body.last_id;
    for (const id of ids) {
      const renamed = await http(`${API}/sessions/${id}`, { key: own, body: { yuxi: { title: `renamed ${id}`, is_pinned: true } } });
      assert.equal(renamed.status, 200, renamed.text);
    }
    // The session the client's cursor names is archived between two pages, and the one after it too.
    for (const id of [boundary, ids[2]]) {
      const archived = await http(`${API}/sessions/${id}/archive`, { method: 'POST', key: own });
      assert.equal(archived.status, 200, archived.text);
      assert.equal(archived.body.yuxi.archived, true);
    }

    const secondPage = await http(`${API}/sessions?limit=100&order=asc&after=${boundary}`, { key: own });
    assert.equal(secondPage.status, 200, 'an archived session is still a cursor of its owner');
    assert.deepEqual(secondPage.body.data.map((s: any) => s.id), [ids[3]], 'the next page starts after the cursor; archived sessions leave the default list');
    assert.deepEqual(secondPage.body.data.map((s: any) => [s.yuxi.title, s.yuxi.is_pinned]), [[`renamed ${ids[3]}`, true]]);
    const backwards = await http(`${API}/sessions?limit=100&order=desc&after=${boundary}`, { key: own });
    assert.deepEqual(backwards.body.data.map((s: any) => s.id), [ids[0]]);
    const archivedPage = await http(`${API}/sessions?limit=1&order=asc&archived=true&after=${ids[0]}`, { key: own });
    assert.deepEqual(archivedPage.body.data.map((s: any) => s.id), [boundary]);
    assert.equal(archivedPage.body.has_more, true);
    const archivedRest = await http(`${API}/sessions?limit=100&order=asc&archived=true&after=${archivedPage.body.last_id}`, { key: own });
    assert.deepEqual(archivedRest.body.data.map((s: any) => s.id), [ids[2]]);

    const byAgent = await http(`${API}/sessions?limit=100&order=asc&agent_id=default-chatbot`, { key: own });
    assert.deepEqual(byAgent.body.data.map((s: any) => s.id), [ids[0], ids[3]]);
    const none = await http(`${API}/sessions?limit=100&agent_id=another-agent`, { key: own });
    assert.deepEqual(none.body.data, []);
  });

  it('validates limit and order', async () => {
    for (const q of ['limit=0', 'limit=101', 'order=sideways', 'limit=abc']) {
      const res = await http(`${API}/sessions?${q}`, { key });
      assert.equal(res.status, 422, q);
      assert.equal(res.body.error.code, 'validation_failed', q);
    }
  });

  it('rejects an items cursor from another turn or session with 400', async () => {
    const a = await createSession('first turn', key);
    const stream = await SseStream.open(a.id, { key });
    try {
      const first = await stream.waitForType('agent.session.turn.completed');
      await sendAs(key, a.id, 'second turn');
      const second = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== first.data.turn_id);
      const firstItems = await http(`${API}/sessions/${a.id}/turns/${first.data.turn_id}/items?order=asc`, { key });
      const foreignCursor = firstItems.body.data[0].id;

      const ownCursor = await http(`${API}/sessions/${a.id}/turns/${first.data.turn_id}/items?order=asc&after=${foreignCursor}`, { key });
      assert.equal(ownCursor.status, 200, 'the cursor is an item of its own turn');
      const sessionWide = await http(`${API}/sessions/${a.id}/items?order=asc&after=${foreignCursor}`, { key });
      assert.equal(sessionWide.status, 200, 'and of the session');
      const otherTurn = await http(`${API}/sessions/${a.id}/turns/${second.data.turn_id}/items?after=${foreignCursor}`, { key });
      assert.equal(otherTurn.status, 400, otherTurn.text);
      assert.equal(otherTurn.body.error.code, 'invalid_cursor');
    } finally {
      stream.close();
    }

    const b = await createSession(undefined, key);
    const bogus = await http(`${API}/sessions/${a.id}/items?after=${b.id}`, { key });
    assert.equal(bogus.status, 400);
    assert.equal(bogus.body.error.code, 'invalid_cursor');
    const turns = await http(`${API}/sessions/${a.id}/turns?after=${b.id}`, { key });
    assert.equal(turns.status, 400);
    assert.equal(turns.body.error.code, 'invalid_cursor');
  });

  it('pages by the documented default sizes: sessions 50, turns and items 20', async () => {
    const own = await createUserKey(`pager-defaults-${newKey()}`);
    const created: string[] = [];
    for (let i = 0; i < 51; i += 1) created.push((await createSession(undefined, own)).id);
    const sessions = await http(`${API}/sessions`, { key: own });
    assert.equal(sessions.body.data.length, 50);
    assert.equal(sessions.body.has_more, true);
    assert.deepEqual(sessions.body.data.map((s: any) => s.id), [...created].reverse().slice(0, 50), 'newest first by default');

    // One turn of ten tool calls (22 items), then twenty more turns: 21 turns, 62 items in all.
    const session = await createSession(`${'[[tool:calculator {"expression":"1+1"}]]'.repeat(10)}`, own);
    const stream = await SseStream.open(session.id, { key: own });
    try {
      const toolTurn = await stream.waitForType('agent.session.turn.completed');
      for (let i = 0; i < 20; i += 1) await sendAs(own, session.id, `turn ${i}`);
      for (let n = 2; n <= 21; n += 1) {
        await stream.waitFor(() => stream.events.filter((e) => e.type === 'agent.session.turn.completed').length >= n);
      }
      const turns = await http(`${API}/sessions/${session.id}/turns`, { key: own });
      assert.equal(turns.body.data.length, 20);
      assert.equal(turns.body.has_more, true);
      const allTurns = await http(`${API}/sessions/${session.id}/turns?limit=100`, { key: own });
      assert.equal(allTurns.body.data.length, 21);

      const turnItems = await http(`${API}/sessions/${session.id}/turns/${toolTurn.data.turn_id}/items`, { key: own });
      const allTurnItems = await http(`${API}/sessions/${session.id}/turns/${toolTurn.data.turn_id}/items?limit=100`, { key: own });
      assert.ok(allTurnItems.body.data.length > 20, `the tool turn has ${allTurnItems.body.data.length} items`);
      assert.equal(turnItems.body.data.length, 20);
      assert.equal(turnItems.body.has_more, true);

      const items = await http(`${API}/sessions/${session.id}/items`, { key: own });
      assert.equal(items.body.data.length, 20);
      assert.equal(items.body.has_more, true);
    } finally {
      stream.close();
    }
  });
});
