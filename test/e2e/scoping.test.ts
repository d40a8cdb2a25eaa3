import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { API, createSession, http, newKey } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { createUserKey } from '../support/users.js';

describe('owner scoping', () => {
  let otherKey: string;
  before(async () => {
    otherKey = await createUserKey(`scoping-${newKey()}`);
  });

  it('hides one caller’s sessions from another: 404 on every path, absent from lists', async () => {
    const mine = await createSession('private');
    const stream = await SseStream.open(mine.id);
    const done = await stream.waitForType('agent.session.turn.completed');
    stream.close();
    const turnId = done.data.turn_id;
    const runId = done.data.turn.yuxi.result_run_id;

    for (const path of [
      `/sessions/${mine.id}`,
      `/sessions/${mine.id}/turns`,
      `/sessions/${mine.id}/turns/${turnId}`,
      `/sessions/${mine.id}/turns/${turnId}/items`,
      `/sessions/${mine.id}/items`,
      `/sessions/${mine.id}/runs/${runId}`,
      `/sessions/${mine.id}/receipt?idempotency_key=x`,
    ]) {
      const res = await http(`${API}${path}`, { key: otherKey });
      assert.equal(res.status, 404, path);
      assert.equal(res.body.error.code, 'not_found', path);
    }
    const post = await http(`${API}/sessions/${mine.id}/events`, {
      key: otherKey,
      idempotencyKey: newKey(),
      body: { events: [{ type: 'agent.session.input.message', input: 'intrude' }] },
    });
    assert.equal(post.status, 404);
    const sse = await SseStream.open(mine.id, { key: otherKey });
    assert.equal(sse.status, 404);

    const theirs = await createSession('theirs', otherKey);
    const theirList = await http(`${API}/sessions?limit=100`, { key: otherKey });
    assert.deepEqual(theirList.body.data.map((s: any) => s.id), [theirs.id]);
    const myList = await http(`${API}/sessions?limit=100`);
    assert.ok(myList.body.data.some((s: any) => s.id === mine.id));
    assert.ok(!myList.body.data.some((s: any) => s.id === theirs.id));

    const foreignCursor = await http(`${API}/sessions?after=${mine.id}`, { key: otherKey });
    assert.equal(foreignCursor.status, 400);
    assert.equal(foreignCursor.body.error.code, 'invalid_cursor');
  });

  it('rejects missing and unknown keys with 401', async () => {
    const none = await http(`${API}/sessions`, { key: null });
    assert.equal(none.status, 401);
    assert.equal(none.body.error.code, 'unauthorized');
    const wrong = await http(`${API}/sessions`, { key: 'yx_not_a_real_key_000000000000' });
    assert.equal(wrong.status, 401);
  });
});
