import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { API, createSession, http, newKey } from '../support/http.js';
import { createUserKey } from '../support/users.js';

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
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) ids.push((await createSession(undefined, key)).id);
    const firstPage = await http(`${API}/sessions?limit=2&order=asc`, { key });
    const boundary = firstPage.body.last_id;
    for (const id of ids) await http(`${API}/sessions/${id}`, { key, body: { yuxi: { title: `renamed ${id}`, is_pinned: true } } });
    const secondPage = await http(`${API}/sessions?limit=100&order=asc&after=${boundary}`, { key });
    const all = await http(`${API}/sessions?limit=100&order=asc`, { key });
    const allIds = all.body.data.map((s: any) => s.id);
    assert.deepEqual(secondPage.body.data.map((s: any) => s.id), allIds.slice(allIds.indexOf(boundary) + 1));

    const byAgent = await http(`${API}/sessions?limit=100&agent_id=default-chatbot`, { key });
    assert.equal(byAgent.body.data.length, allIds.length);
    const none = await http(`${API}/sessions?limit=100&agent_id=another-agent`, { key });
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
    const a = await createSession(undefined, key);
    const b = await createSession(undefined, key);
    const bogus = await http(`${API}/sessions/${a.id}/items?after=${b.id}`, { key });
    assert.equal(bogus.status, 400);
    assert.equal(bogus.body.error.code, 'invalid_cursor');
    const turns = await http(`${API}/sessions/${a.id}/turns?after=${b.id}`, { key });
    assert.equal(turns.status, 400);
  });
});
