import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { query } from '../support/db.js';
import { API, createSession, http, newKey, sendMessage } from '../support/http.js';
import { upload, uploadDraft } from '../support/files.js';
import { newProductUser } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

describe('idempotency', () => {
  it('replays a create byte for byte, and 409s a different intent under the same key', async () => {
    const key = newKey();
    // A title no other create uses: every session either request could have made is counted by it.
    const title = `replay-${key}`;
    const body = { agent_id: 'default-chatbot', input: 'replay me', title };
    const first = await http(`${API}/sessions`, { body, idempotencyKey: key });
    assert.equal(first.status, 201);
    const second = await http(`${API}/sessions`, { body: { title, input: 'replay me', agent_id: 'default-chatbot' }, idempotencyKey: key });
    assert.equal(second.status, 201);
    assert.equal(second.text, first.text, 'replay is byte-identical (field order does not change the intent)');

    const conflict = await http(`${API}/sessions`, { body: { ...body, input: 'something else' }, idempotencyKey: key });
    assert.equal(conflict.status, 409);
    assert.equal(conflict.body.error.code, 'idempotency_conflict');
    const sessions = await query<{ id: string }>(`SELECT id FROM sessions WHERE title = $1`, [title]);
    assert.deepEqual(sessions.map((row) => row.id), [first.body.id], 'one session: neither the replay nor the refused create made another');
  });

  it('serialises 20 concurrent creates with one key into one session and identical bodies', async () => {
    const key = newKey('concurrent');
    const title = `concurrent-${key}`;
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => http(`${API}/sessions`, { body: { agent_id: 'default-chatbot', input: 'once', title }, idempotencyKey: key })),
    );
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([201]));
    assert.equal(new Set(responses.map((r) => r.text)).size, 1, 'every response is the same bytes');
    const rows = await query(`SELECT id FROM sessions WHERE title = $1`, [title]);
    assert.equal(rows.length, 1, 'exactly one session exists');
    const inputs = await query(`SELECT count(*)::int AS n FROM inputs WHERE session_id = $1`, [rows[0].id]);
    assert.equal(inputs[0].n, 1, 'exactly one input exists');
  });

  it('replays an event submission without queueing it again', async () => {
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      const key = newKey();
      const first = await sendMessage(session.id, 'only once', key);
      const again = await Promise.all([sendMessage(session.id, 'only once', key), sendMessage(session.id, 'only once', key)]);
      assert.equal(first.status, 202);
      for (const res of again) {
        assert.equal(res.status, 202);
        assert.equal(res.text, first.text);
      }
      const changed = await sendMessage(session.id, 'a different text', key);
      assert.equal(changed.status, 409);
      assert.equal(changed.body.error.code, 'idempotency_conflict');

      await stream.waitForType('agent.session.turn.completed');
      const inputs = await query(`SELECT count(*)::int AS n FROM inputs WHERE session_id = $1`, [session.id]);
      assert.equal(inputs[0].n, 1);
      const turns = await http(`${API}/sessions/${session.id}/turns`);
      assert.equal(turns.body.data.length, 1);

      const receipt = await http(`${API}/sessions/${session.id}/receipt?idempotency_key=${encodeURIComponent(key)}`);
      assert.equal(receipt.status, 200);
      assert.deepEqual(receipt.body, first.body);
      const unknown = await http(`${API}/sessions/${session.id}/receipt?idempotency_key=never-sent`);
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, 'not_found');
    } finally {
      stream.close();
    }
  });

  it('concurrent first submissions of one message under one key to an idle session: one input, one accepted event, identical bodies', async () => {
    const session = await createSession();
    const key = newKey('concurrent-msg');
    const responses = await Promise.all(Array.from({ length: 10 }, () => sendMessage(session.id, 'raced once', key)));
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([202]));
    assert.equal(new Set(responses.map((r) => r.text)).size, 1, 'every response is the same bytes');
    const inputs = await query<{ id: string }>(`SELECT id FROM inputs WHERE session_id = $1`, [session.id]);
    assert.deepEqual(inputs.map((row) => row.id), [responses[0]!.body.input_id]);
    const accepted = await query(`SELECT seq FROM session_events WHERE session_id = $1 AND type = 'yuxi.session.event.accepted'`, [session.id]);
    assert.equal(accepted.length, 1, 'one accepted event');
  });

  it('concurrent submissions under distinct keys to one session: each queued once, received and event numbers contiguous', async () => {
    const session = await createSession();
    const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => sendMessage(session.id, `message ${i}`)));
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([202]));
    const inputs = await query<{ id: string; received_seq: string }>(`SELECT id, received_seq FROM inputs WHERE session_id = $1 ORDER BY received_seq`, [session.id]);
    assert.deepEqual(new Set(inputs.map((row) => row.id)), new Set(responses.map((r) => r.body.input_id)));
    assert.deepEqual(inputs.map((row) => Number(row.received_seq)), Array.from({ length: 12 }, (_, i) => i + 1));
    // Every writer numbers its events under the session lock and commits before releasing it: any
    // one read sees the numbers from 1 without a gap or a repeat, the turns' events running meanwhile included.
    const seqs = (await query<{ seq: string }>(`SELECT seq FROM session_events WHERE session_id = $1 ORDER BY seq`, [session.id])).map((row) => Number(row.seq));
    assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1));
    const accepted = await query(`SELECT seq FROM session_events WHERE session_id = $1 AND type = 'yuxi.session.event.accepted'`, [session.id]);
    assert.equal(accepted.length, 12);
  });

  it('a session id in capitals is the same session in every respect: one idempotency scope, attachments bound', async () => {
    const session = await createSession();
    const upper = session.id.toUpperCase();
    const key = newKey();
    const first = await sendMessage(session.id, 'case does not matter', key);
    const shouted = await sendMessage(upper, 'case does not matter', key);
    assert.equal(first.status, 202);
    assert.equal(shouted.status, 202);
    assert.equal(shouted.text, first.text, 'the capitalised URL replays the same receipt');
    // Percent-escaped, the same id again (Express decodes `%41` to `A` in the parameter).
    const escaped = session.id.replace(/[a-f]/g, (c: string) => `%${c.toUpperCase().charCodeAt(0).toString(16)}`);
    const encoded = await sendMessage(escaped, 'case does not matter', key);
    assert.equal(encoded.status, 202, encoded.text);
    assert.equal(encoded.text, first.text, 'the percent-escaped URL replays the same receipt');
    const receipt = await http(`${API}/sessions/${upper}/receipt?idempotency_key=${encodeURIComponent(key)}`);
    assert.deepEqual(receipt.body, first.body);

    const draft = await uploadDraft('notes for a capitalised url\n', 'notes.txt');
    const attached = await http(`${API}/sessions/${upper}/events`, {
      idempotencyKey: newKey(),
      body: { events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up', attachment_file_ids: [draft.id] }, input: 'with a file' }] },
    });
    assert.equal(attached.status, 202, attached.text);
    assert.equal(attached.body.session_id, session.id);
    const listed = await http(`${API}/sessions/${upper}/attachments`);
    assert.deepEqual(listed.body.data.map((a: any) => a.id), [draft.id]);
  });

  it('requires an Idempotency-Key of 1–128 characters', async () => {
    const missing = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot' } });
    assert.equal(missing.status, 422);
    assert.equal(missing.body.error.code, 'idempotency_key_required');
    const tooLong = await http(`${API}/sessions`, { body: { agent_id: 'default-chatbot' }, idempotencyKey: 'k'.repeat(129) });
    assert.equal(tooLong.status, 422);
    assert.equal(tooLong.body.error.code, 'idempotency_key_required');
    const session = await createSession();
    const eventMissing = await http(`${API}/sessions/${session.id}/events`, {
      body: { events: [{ type: 'agent.session.input.message', input: 'x' }] },
    });
    assert.equal(eventMissing.status, 422);
    assert.equal(eventMissing.body.error.code, 'idempotency_key_required');
  });
  it('an upload with an Idempotency-Key: the same bytes return the same draft, other bytes or another name 409', async () => {
    const key = newKey('upload');
    const bytes = `quarterly numbers of ${key}\n`;
    const first = await upload(bytes, 'numbers.txt', { idempotencyKey: key });
    assert.equal(first.status, 201, first.text);
    const retry = await upload(bytes, 'numbers.txt', { idempotencyKey: key });
    assert.equal(retry.status, 201, 'the same answer as the first');
    assert.equal(retry.text, first.text, 'byte for byte');
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    const stored = await query(`SELECT id FROM files WHERE sha256 = $1`, [first.body.yuxi.sha256]);
    assert.deepEqual(stored.map((row) => row.id), [first.body.id], 'one file for the two requests');

    const otherBytes = await upload('other numbers\n', 'numbers.txt', { idempotencyKey: key });
    assert.equal(otherBytes.status, 409, otherBytes.text);
    assert.equal(otherBytes.body.error.code, 'idempotency_conflict');
    const otherName = await upload(bytes, 'renamed.txt', { idempotencyKey: key });
    assert.equal(otherName.status, 409);
    assert.equal(otherName.body.error.code, 'idempotency_conflict');

    assert.equal((await http(`${API}/files/${first.body.id}`)).status, 200, 'the one draft is readable');
    const stranger = await newProductUser('uploader');
    const theirs = await upload(bytes, 'numbers.txt', { idempotencyKey: key, token: stranger.key.secret });
    assert.equal(theirs.status, 201, 'keys are scoped to their owner');
    assert.notEqual(theirs.body.id, first.body.id);

    const plainA = await upload('no key\n', 'plain.txt');
    const plainB = await upload('no key\n', 'plain.txt');
    assert.notEqual(plainA.body.id, plainB.body.id, 'without a key every upload is a new draft');
    const tooLong = await upload('x\n', 'x.txt', { idempotencyKey: 'k'.repeat(129) });
    assert.equal(tooLong.status, 422);
    assert.equal(tooLong.body.error.code, 'idempotency_key_required');
  });

  it('concurrent uploads under one key make one draft', async () => {
    const key = newKey('upload-race');
    const answers = await Promise.all(Array.from({ length: 5 }, () => upload(`raced bytes of ${key}\n`, 'race.txt', { idempotencyKey: key })));
    assert.deepEqual([...new Set(answers.map((a) => a.status))], [201]);
    assert.equal(new Set(answers.map((a) => a.text)).size, 1, 'every answer is the first draft');
    const drafts = await query(`SELECT id FROM files WHERE sha256 = $1 AND status = 'draft'`, [answers[0]!.body.yuxi.sha256]);
    assert.deepEqual(drafts.map((row) => row.id), [answers[0]!.body.id], 'the raced copies are not drafts (the sweep removes them)');
  });
});
