import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { createSessionWith } from '../support/agents.js';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, createSession, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { call, newProductUser, until } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

// DELETE /sessions/{id}: a soft delete, idempotent, refused while work is
// active; afterwards the session and everything under it is 404 and the files sweep removes its bytes.

const deleteSession = (sessionId: string) => http(`${API}/sessions/${sessionId}`, { method: 'DELETE' });

/** The durable-core invariant of deletion (scripts/lib/invariants.mjs) holds for these sessions. */
async function assertDeletedIdle(sessionIds: string[]): Promise<void> {
  const { checkInvariants } = (await import(pathToFileURL(path.join(process.cwd(), 'scripts/lib/invariants.mjs')).href)) as {
    checkInvariants(url: string, options: { sessionIds: string[]; strict: boolean; only: string[] }): Promise<{ checked: number; violations: unknown[] }>;
  };
  const result = await checkInvariants(env.databaseUrl, { sessionIds, strict: true, only: ['deleted_session_is_idle'] });
  assert.equal(result.checked, 1, 'the check ran');
  assert.deepEqual(result.violations, []);
}

async function completedTurn(stream: SseStream): Promise<string> {
  const done = await stream.waitForType('agent.session.turn.completed');
  return done.data.turn_id as string;
}

describe('deleting a session', () => {
  it('answers 200 twice; then the session and everything under it is 404 and it leaves the lists', async () => {
    const session = await createSession('hello before deleting');
    const stream = await SseStream.open(session.id);
    let turnId: string;
    try {
      turnId = await completedTurn(stream);
    } finally {
      stream.close();
    }
    const inputId = session.yuxi.receipt.input_id as string;
    const runId = (await http(`${API}/sessions/${session.id}/turns/${turnId}`)).body.yuxi.result_run_id as string;

    const first = await deleteSession(session.id);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { id: session.id, object: 'agent.session', deleted: true });
    const again = await deleteSession(session.id);
    assert.equal(again.status, 200, 'a repeated delete succeeds the same way');
    assert.deepEqual(again.body, first.body);

    const base = `${API}/sessions/${session.id}`;
    for (const route of [
      base,
      `${base}/state`,
      `${base}/queue`,
      `${base}/items`,
      `${base}/turns`,
      `${base}/turns/${turnId}`,
      `${base}/turns/${turnId}/items`,
      `${base}/runs/${runId}`,
      `${base}/inputs/${inputId}`,
      `${base}/attachments`,
      `${base}/receipt?idempotency_key=anything`,
    ]) {
      const res = await http(route);
      assert.equal(res.status, 404, route);
      assert.equal(res.body.error.code, 'not_found', route);
    }
    const events = await SseStream.open(session.id);
    assert.equal(events.status, 404, 'its event stream is gone too');
    events.close();
    assert.equal((await sendMessage(session.id, 'after the delete')).status, 404, 'inputs after deletion are 404');
    assert.equal((await postEvent(session.id, { type: 'yuxi.session.input.continue' })).status, 404);
    assert.equal((await http(base, { body: { yuxi: { title: 'x' } } })).status, 404, 'updates too');
    assert.equal((await http(`${base}/archive`, { method: 'POST' })).status, 404);

    const listed = await http(`${API}/sessions?limit=100`);
    assert.ok(!listed.body.data.some((s: any) => s.id === session.id), 'not in the active list');
    const archive = await http(`${API}/sessions?archived=true&limit=100`);
    assert.ok(!archive.body.data.some((s: any) => s.id === session.id), 'nor in the archive');
  });

  it('a replayed create or event of a deleted session is 404, never its first answer', async () => {
    const createKey = newKey('create');
    const body = { agent_id: 'default-chatbot', input: 'replayed after delete' };
    const created = await http(`${API}/sessions`, { body, idempotencyKey: createKey });
    assert.equal(created.status, 201);
    const stream = await SseStream.open(created.body.id);
    try {
      await completedTurn(stream);
    } finally {
      stream.close();
    }
    const eventKey = newKey('msg');
    assert.equal((await sendMessage(created.body.id, 'a second one', eventKey)).status, 202);
    const settled = await until(async () => ((await http(`${API}/sessions/${created.body.id}`)).body.status === 'completed' && (await http(`${API}/sessions/${created.body.id}/queue`)).body.data.length === 0 ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(settled, true);
    assert.equal((await deleteSession(created.body.id)).status, 200);

    const replayed = await http(`${API}/sessions`, { body, idempotencyKey: createKey });
    assert.equal(replayed.status, 404, replayed.text);
    assert.equal(replayed.body.error.code, 'not_found');
    const event = await sendMessage(created.body.id, 'a second one', eventKey);
    assert.equal(event.status, 404);
  });

  it('is owner-scoped: another owner gets 404 and the session stays', async () => {
    const session = await createSession();
    const stranger = await newProductUser('stranger');
    const foreign = await call(stranger.caller, `${API}/sessions/${session.id}`, { method: 'DELETE' });
    assert.equal(foreign.status, 404);
    assert.equal((await http(`${API}/sessions/${session.id}`)).status, 200, 'the owner still sees it');
    assert.equal((await http(`${API}/sessions/not-a-uuid`, { method: 'DELETE' })).status, 404);
  });

  it('is refused with 409 while a turn is active, and succeeds once it is cancelled', async () => {
    const session = await createSession('[[ask:Delete me?]]');
    const stream = await SseStream.open(session.id);
    try {
      const waiting = await stream.waitForType('yuxi.session.turn.waiting');
      const busy = await deleteSession(session.id);
      assert.equal(busy.status, 409, busy.text);
      assert.equal(busy.body.error.code, 'state_conflict');
      assert.equal((await http(`${API}/sessions/${session.id}`)).status, 200, 'nothing was deleted');

      assert.equal((await postEvent(session.id, { type: 'agent.session.input.cancel' })).status, 202);
      await stream.waitForType('agent.session.turn.cancelled', waiting.data.turn_id);
      const deleted = await deleteSession(session.id);
      assert.equal(deleted.status, 200, deleted.text);
      assert.equal((await http(`${API}/sessions/${session.id}`)).status, 404);
    } finally {
      stream.close();
    }
  });

  it('removes the session\'s files: attachments are 404 at once and the sweep removes their bytes and rows', async () => {
    const draft = await uploadDraft('notes that go with the session\n', 'notes.txt');
    const created = await http(`${API}/sessions`, {
      idempotencyKey: newKey('create'),
      body: { agent_id: 'default-chatbot', input: 'Read the notes', yuxi: { attachment_file_ids: [draft.id] } },
    });
    assert.equal(created.status, 201, created.text);
    const sessionId = created.body.id as string;
    const stream = await SseStream.open(sessionId);
    try {
      await completedTurn(stream);
    } finally {
      stream.close();
    }
    const stored = path.join(env.storageDir, 'sessions', sessionId, 'files', draft.id);
    assert.ok(existsSync(stored), 'the attachment is in the session workdir');

    assert.equal((await deleteSession(sessionId)).status, 200);
    assert.equal((await http(`${API}/sessions/${sessionId}/files/${draft.id}/content`)).status, 404, 'its bytes are not served any more');
    await assertDeletedIdle([sessionId]);
    // The test stack sweeps every 500 ms (FILE_SWEEP_MS): bounded polling, no fixed wait.
    const swept = await until(async () => ((await query(`SELECT 1 FROM files WHERE id = $1`, [draft.id])).length === 0 && !existsSync(stored) ? true : undefined), {
      attempts: 150,
      intervalMs: 200,
    });
    assert.equal(swept, true, 'the sweep removed the file\'s row and bytes');
  });
  it('takes a cooperation tree with its root; a member alone is refused (409)', async () => {
    const coordinator = await createSessionWith('coordinator', '[[tool:create_subagent {"task":"alpha","name":"a"}]] [[tool:wait_subagents {}]]');
    const stream = await SseStream.open(coordinator.id);
    try {
      const end = await stream.waitFor((e) => ['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled'].includes(e.type), 30_000);
      assert.equal(end.type, 'agent.session.turn.completed');
    } finally {
      stream.close();
    }
    const tree = (await http(`${API}/sessions?root_session_id=${coordinator.id}&limit=100`)).body.data;
    const member = tree.find((s: any) => s.id !== coordinator.id);
    assert.ok(member, 'the coordinator made a member');

    const alone = await deleteSession(member.id);
    assert.equal(alone.status, 409, alone.text);
    assert.equal(alone.body.error.code, 'state_conflict');
    assert.equal(alone.body.error.details.root_session_id, coordinator.id);

    assert.equal((await deleteSession(coordinator.id)).status, 200);
    assert.equal((await http(`${API}/sessions/${member.id}`)).status, 404, 'the member went with its root');
    assert.equal((await http(`${API}/sessions/${member.id}/items`)).status, 404);
    assert.deepEqual((await http(`${API}/sessions?root_session_id=${coordinator.id}&limit=100`)).body.data, [], 'the tree lists nothing');
    await assertDeletedIdle([coordinator.id, member.id]);
  });
});
