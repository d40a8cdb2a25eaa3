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

    // Every documented read of a session's resources, its ids the owner's real ones.
    const ids: Record<string, string> = { session_id: mine.id, turn_id: turnId, run_id: runId, input_id: mine.yuxi.receipt.input_id, file_id: '0123456789abcdef0123456789abcdef', artifact_id: '01234567-89ab-4def-8123-456789abcdef' };
    const document = (await http('/openapi.json', { key: null })).body as { paths: Record<string, Record<string, unknown>> };
    const reads = Object.keys(document.paths).filter((path) => path.startsWith(`${API}/sessions/{session_id}`) && document.paths[path]!.get && !path.endsWith('/events'));
    assert.ok(reads.length >= 10, `the session reads of the document: ${reads.join(', ')}`);
    for (const template of reads) {
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => ids[name] ?? assert.fail(`no id for {${name}} in ${template}`));
      const res = await http(path.endsWith('/receipt') ? `${path}?idempotency_key=x` : path, { key: otherKey });
      assert.equal(res.status, 404, path);
      assert.equal(res.body.error.code, 'not_found', path);
    }
    // And the writes of a session itself: update, archive, delete. The session is untouched.
    for (const [method, path, body] of [
      ['POST', `${API}/sessions/${mine.id}`, { yuxi: { title: 'taken over' } }],
      ['POST', `${API}/sessions/${mine.id}/archive`, undefined],
      ['DELETE', `${API}/sessions/${mine.id}`, undefined],
    ] as const) {
      const res = await http(path, { method, key: otherKey, body });
      assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
    }
    const untouched = await http(`${API}/sessions/${mine.id}`);
    assert.equal(untouched.status, 200);
    assert.equal(untouched.body.yuxi.archived, false, 'not archived');
    assert.notEqual(untouched.body.yuxi.title, 'taken over', 'not renamed');
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
