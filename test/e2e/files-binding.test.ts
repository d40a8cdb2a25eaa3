import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, createSession, http, newKey } from '../support/http.js';
import { signToken, until } from '../support/identity.js';

const message = (text: string, fileIds: string[], extra: Record<string, unknown> = {}) => ({
  type: 'agent.session.input.message',
  input: [{ role: 'user', content: [{ type: 'input_text', text }] }],
  yuxi: { mode: 'follow_up', attachment_file_ids: fileIds, ...extra },
});

async function submit(sessionId: string, event: object, idempotencyKey = newKey('msg'), key?: string) {
  return http(`${API}/sessions/${sessionId}/events`, { body: { events: [event] }, idempotencyKey, key });
}

async function createWith(fileIds: string[], options: { key?: string; idempotencyKey?: string; text?: string } = {}) {
  return http(`${API}/sessions`, {
    body: { agent_id: 'default-chatbot', input: options.text ?? 'see attached', yuxi: { attachment_file_ids: fileIds } },
    idempotencyKey: options.idempotencyKey ?? newKey('create'),
    key: options.key,
  });
}

/** The files of the database row of each id: status and binding (read-only check). */
async function fileRows(ids: string[]) {
  return query<{ id: string; status: string; session_id: string | null; input_id: string | null }>(
    `SELECT id, status, session_id, input_id FROM files WHERE id = ANY($1::text[]) ORDER BY id`,
    [ids],
  );
}

describe('files: attaching drafts to inputs', () => {
  it('binds drafts on session create: the input lists them in order and they stop being drafts', async () => {
    const a = await uploadDraft('first file', 'a.txt');
    const b = await uploadDraft('{"second":true}', 'b.json');
    const created = await createWith([b.id, a.id]);
    assert.equal(created.status, 201, created.text);
    const inputId = created.body.yuxi.receipt.input_id;
    const input = await http(`${API}/sessions/${created.body.id}/inputs/${inputId}`);
    assert.equal(input.status, 200);
    assert.deepEqual(input.body.attachment_file_ids, [b.id, a.id]);
    assert.deepEqual(
      input.body.attachments.map((f: any) => [f.id, f.filename, f.input_id, f.session_id]),
      [
        [b.id, 'b.json', inputId, created.body.id],
        [a.id, 'a.txt', inputId, created.body.id],
      ],
      'attachments follow attachment_file_ids',
    );
    assert.ok(['preparing', 'ready'].includes(input.body.attachment_status));
    for (const draft of [a, b]) {
      const read = await http(`${API}/files/${draft.id}`);
      assert.equal(read.status, 409, 'an attached file is no draft any more');
      assert.equal(read.body.error.code, 'file_already_bound');
      const del = await http(`${API}/files/${draft.id}`, { method: 'DELETE' });
      assert.equal(del.status, 409);
      assert.equal(del.body.error.code, 'file_already_bound');
    }
    const rows = await fileRows([a.id, b.id]);
    assert.ok(rows.every((row) => row.session_id === created.body.id && row.input_id === inputId && ['bound', 'ready'].includes(row.status)));
  });

  it('binds drafts on a message event, and an input without files is ready at once', async () => {
    const session = await createSession('hello');
    const plain = await submit(session.id, message('no files', []));
    assert.equal(plain.status, 202);
    const plainInput = await http(`${API}/sessions/${session.id}/inputs/${plain.body.input_id}`);
    assert.equal(plainInput.body.attachment_status, 'ready');
    assert.deepEqual(plainInput.body.attachments, []);

    const draft = await uploadDraft('attached to a message', 'notes.md');
    const res = await submit(session.id, message('read this', [draft.id]));
    assert.equal(res.status, 202, res.text);
    const input = await http(`${API}/sessions/${session.id}/inputs/${res.body.input_id}`);
    assert.deepEqual(input.body.attachment_file_ids, [draft.id]);
    assert.equal(input.body.attachments[0].id, draft.id);
    assert.equal(input.body.attachments[0].mime_type, 'text/markdown');
    assert.equal(input.body.attachments[0].sha256, draft.yuxi.sha256);
    assert.equal((await http(`${API}/files/${draft.id}`)).status, 409);
  });

  it('refuses per-message attachment ids, more than 20 files, malformed and repeated ids (422)', async () => {
    const session = await createSession();
    const draft = await uploadDraft('x', 'x.txt');
    const perMessage = await submit(session.id, {
      type: 'agent.session.input.message',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'old style' }], yuxi: { attachment_file_ids: [draft.id] } }],
    });
    assert.equal(perMessage.status, 422);
    assert.equal(perMessage.body.error.code, 'validation_failed');
    assert.match(JSON.stringify(perMessage.body.error.details.fields), /input\[0\]\.yuxi is not supported/);
    const perMessageCreate = await http(`${API}/sessions`, {
      idempotencyKey: newKey(),
      body: { agent_id: 'default-chatbot', input: [{ role: 'user', content: 'x', yuxi: { attachment_file_ids: [draft.id] } }] },
    });
    assert.equal(perMessageCreate.status, 422);

    const tooMany = await submit(session.id, message('many', Array.from({ length: 21 }, (_, i) => i.toString(16).padStart(32, '0'))));
    assert.equal(tooMany.status, 422);
    assert.equal(tooMany.body.error.code, 'validation_failed');
    const malformed = await submit(session.id, message('bad id', ['../../etc/passwd']));
    assert.equal(malformed.status, 422);
    const repeated = await submit(session.id, message('twice', [draft.id, draft.id]));
    assert.equal(repeated.status, 422);
    const withoutInput = await http(`${API}/sessions`, { idempotencyKey: newKey(), body: { agent_id: 'default-chatbot', yuxi: { attachment_file_ids: [draft.id] } } });
    assert.equal(withoutInput.status, 422, 'attachments need an input');
    assert.equal((await http(`${API}/files/${draft.id}`)).status, 200, 'still a draft after every refusal');
  });

  it('an unknown file is 404 and nothing of the submission is stored', async () => {
    const user = await signToken();
    const draft = await uploadDraft('real one', 'real.txt', { token: user });
    const unknown = '0123456789abcdef0123456789abcdef';
    const create = await createWith([draft.id, unknown], { key: user });
    assert.equal(create.status, 404);
    assert.equal(create.body.error.code, 'not_found');
    assert.equal(create.body.error.details.file_id, unknown);
    assert.equal((await http(`${API}/sessions`, { key: user })).body.data.length, 0, 'no session was created');
    assert.equal((await http(`${API}/files/${draft.id}`, { key: user })).status, 200, 'the valid draft was not bound');

    const session = (await http(`${API}/sessions`, { key: user, idempotencyKey: newKey(), body: { agent_id: 'default-chatbot' } })).body;
    const key = newKey('msg');
    const refused = await submit(session.id, message('with a ghost', [draft.id, unknown]), key, user);
    assert.equal(refused.status, 404);
    const queue = await http(`${API}/sessions/${session.id}/queue`, { key: user });
    assert.equal(queue.body.data.length, 0, 'no input was queued');
    assert.equal((await http(`${API}/sessions/${session.id}/receipt?idempotency_key=${key}`, { key: user })).status, 404, 'no receipt was kept');
    assert.equal((await http(`${API}/files/${draft.id}`, { key: user })).status, 200);
    // The refused submission used no sequence number: the next input is the session's first.
    const next = await submit(session.id, message('with the real one', [draft.id]), newKey(), user);
    assert.equal(next.status, 202);
    assert.equal((await http(`${API}/sessions/${session.id}/inputs/${next.body.input_id}`, { key: user })).body.received_seq, 1);

    const stranger = await signToken();
    const theirs = await uploadDraft('not yours', 'theirs.txt', { token: stranger });
    const foreign = await submit(session.id, message('borrowing', [theirs.id]), newKey(), user);
    assert.equal(foreign.status, 404, 'another caller\'s draft does not exist for this one');
  });

  it('refuses a file attached elsewhere with 409 file_already_bound, storing nothing', async () => {
    const draft = await uploadDraft('only once', 'once.txt');
    const first = await createWith([draft.id]);
    assert.equal(first.status, 201);
    const again = await createWith([draft.id]);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'file_already_bound');
    const other = await createSession();
    const onMessage = await submit(other.id, message('steal it', [draft.id]));
    assert.equal(onMessage.status, 409);
    assert.equal(onMessage.body.error.code, 'file_already_bound');
    assert.equal((await http(`${API}/sessions/${other.id}/queue`)).body.data.length, 0);
    const sameSession = await submit(first.body.id, message('again here', [draft.id]));
    assert.equal(sameSession.status, 409);
    const [row] = await fileRows([draft.id]);
    assert.equal(row?.input_id, first.body.yuxi.receipt.input_id, 'still bound to the first input');
  });

  it('makes the attachment order part of the idempotency intent', async () => {
    const session = await createSession();
    const a = await uploadDraft('A', 'a.txt');
    const b = await uploadDraft('B', 'b.txt');
    const key = newKey('order');
    const first = await submit(session.id, message('two files', [a.id, b.id]), key);
    assert.equal(first.status, 202);
    const replay = await submit(session.id, message('two files', [a.id, b.id]), key);
    assert.equal(replay.status, 202);
    assert.equal(replay.text, first.text, 'the same intent replays the first receipt byte for byte');
    const reordered = await submit(session.id, message('two files', [b.id, a.id]), key);
    assert.equal(reordered.status, 409);
    assert.equal(reordered.body.error.code, 'idempotency_conflict');
    const inputs = await query(`SELECT id FROM inputs WHERE session_id = $1`, [session.id]);
    assert.equal(inputs.length, 1, 'one input, bound once');

    const c = await uploadDraft('C', 'c.txt');
    const d = await uploadDraft('D', 'd.txt');
    const createKey = newKey('create-order');
    const created = await createWith([c.id, d.id], { idempotencyKey: createKey });
    assert.equal(created.status, 201);
    const createdAgain = await createWith([c.id, d.id], { idempotencyKey: createKey });
    assert.equal(createdAgain.text, created.text);
    const createReordered = await createWith([d.id, c.id], { idempotencyKey: createKey });
    assert.equal(createReordered.status, 409);
    assert.equal(createReordered.body.error.code, 'idempotency_conflict');
  });

  it('binds a file exactly once when two submissions race for it', async () => {
    const draft = await uploadDraft('contended', 'race.txt');
    const [s1, s2] = await Promise.all([createSession(), createSession()]);
    const results = await Promise.all([submit(s1.id, message('mine', [draft.id])), submit(s2.id, message('no, mine', [draft.id]))]);
    assert.deepEqual(results.map((r) => r.status).sort(), [202, 409]);
    assert.equal(results.find((r) => r.status === 409)?.body.error.code, 'file_already_bound');
    const inputs = await query(`SELECT id FROM inputs WHERE session_id = ANY($1::uuid[])`, [[s1.id, s2.id]]);
    assert.equal(inputs.length, 1, 'only the winner stored an input');
  });

  it('two submissions binding the same files in opposite orders: one binds them all, the other is a clean 409, never a deadlock', async () => {
    for (let round = 0; round < 6; round++) {
      const drafts = await Promise.all(Array.from({ length: 8 }, (_, i) => uploadDraft(`shared ${round}.${i}`, `shared-${i}.txt`)));
      const ids = drafts.map((draft) => draft.id);
      const [s1, s2] = await Promise.all([createSession(), createSession()]);
      const results = await Promise.all([submit(s1.id, message('in order', ids)), submit(s2.id, message('reversed', [...ids].reverse()))]);
      assert.deepEqual(results.map((r) => r.status).sort(), [202, 409], `round ${round}: ${results.map((r) => r.text).join(' | ')}`);
      assert.equal(results.find((r) => r.status === 409)?.body.error.code, 'file_already_bound');
      const winner = results.find((r) => r.status === 202)!.body.input_id;
      assert.deepEqual(new Set((await fileRows(ids)).map((row) => row.input_id)), new Set([winner]), 'every file bound to the winner');
    }
  });

  it('refuses a draft that expired (404)', async () => {
    const owner = await signToken();
    const draft = await uploadDraft('expires soon', 'soon.txt', { baseUrl: env.apiUrlFileLimits, token: owner });
    const expired = await until(async () => ((await http(`${API}/files/${draft.id}`, { key: owner })).status === 404 ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(expired, true);
    const res = await createWith([draft.id], { key: owner });
    assert.equal(res.status, 404);
    assert.equal(res.body.error.code, 'not_found');
  });
});
