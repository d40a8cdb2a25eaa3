import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { upload, uploadDraft } from '../support/files.js';
import { API, createSession, http, newKey, postEvent, sendMessage } from '../support/http.js';
import { signToken, until } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

const sha256 = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');
const draftPath = (fileId: string) => path.join(env.storageDir, 'drafts', fileId);
const workdirPath = (sessionId: string, fileId: string) => path.join(env.storageDir, 'sessions', sessionId, 'files', fileId);

function withFiles(text: string, fileIds: string[]) {
  return { type: 'agent.session.input.message', input: text, yuxi: { mode: 'follow_up', attachment_file_ids: fileIds } };
}

async function inputOf(sessionId: string, inputId: string): Promise<any> {
  const res = await http(`${API}/sessions/${sessionId}/inputs/${inputId}`);
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Polls (bounded) until the input's attachments are ready; the input. */
async function untilReady(sessionId: string, inputId: string): Promise<any> {
  const ready = await until(async () => {
    const input = await inputOf(sessionId, inputId);
    return input.attachment_status === 'ready' ? input : undefined;
  }, { attempts: 150, intervalMs: 100 });
  assert.ok(ready, `input ${inputId} became ready`);
  return ready;
}

describe('files: preparation into the session workdir', () => {
  it('accepts at once as preparing, copies the files into the workdir, then the input runs', async () => {
    const content = 'The workdir copy of this file.\n';
    const draft = await uploadDraft(content, 'workdir.txt');
    const created = await http(`${API}/sessions`, {
      idempotencyKey: newKey('create'),
      body: { agent_id: 'default-chatbot', input: 'use the file', yuxi: { attachment_file_ids: [draft.id] } },
    });
    assert.equal(created.status, 201);
    const sessionId = created.body.id;
    const inputId = created.body.yuxi.receipt.input_id;
    const input = await untilReady(sessionId, inputId);
    assert.equal(input.attachment_error, null);
    assert.equal(input.attachments[0].status, 'ready');
    assert.equal(input.attachments[0].url, `/api/v1/agents/sessions/${sessionId}/files/${draft.id}/content`);

    assert.equal(sha256(readFileSync(workdirPath(sessionId, draft.id))), draft.yuxi.sha256, 'the workdir holds the same bytes');
    const cleaned = await until(async () => (!existsSync(draftPath(draft.id)) ? true : undefined), { attempts: 50, intervalMs: 100 });
    assert.equal(cleaned, true, 'the uploaded copy is removed once the workdir owns the file');
    const [row] = await query(`SELECT status, draft_key FROM files WHERE id = $1`, [draft.id]);
    assert.deepEqual(row, { status: 'ready', draft_key: null });

    const consumed = await until(async () => {
      const now = await inputOf(sessionId, inputId);
      return now.status === 'consumed' ? now : undefined;
    }, { attempts: 150, intervalMs: 100 });
    assert.ok(consumed, 'the input ran once ready');
    assert.equal(consumed.attachment_status, 'ready');
  });

  it('never runs an input whose files are not ready, and never lets a later follow-up overtake it', async () => {
    const session = await createSession('warm up');
    const stream = await SseStream.open(session.id);
    try {
      const warmUp = (await stream.waitForType('agent.session.turn.completed')).data.turn_id;
      const content = 'bytes that go missing for a while';
      const draft = await uploadDraft(content, 'flaky.txt');
      // Storage trouble: the upload's bytes are gone when the worker tries to copy them.
      rmSync(draftPath(draft.id));

      const a = await postEvent(session.id, withFiles('first, with a file', [draft.id]));
      assert.equal(a.status, 202, 'accepted at once, whatever the preparation does');
      const failed = await until(async () => {
        const input = await inputOf(session.id, a.body.input_id);
        return input.attachment_error ? input : undefined;
      }, { attempts: 100, intervalMs: 100 });
      assert.ok(failed, 'the failed preparation is visible on the input');
      assert.equal(failed.attachment_status, 'preparing');
      assert.match(failed.attachment_error, /missing/);
      assert.ok(!failed.attachment_error.includes(env.storageDir), 'no storage path is shown to clients');

      const b = await sendMessage(session.id, 'second, plain');
      assert.equal(b.status, 202);
      const promote = await postEvent(session.id, { type: 'yuxi.session.input.promote', input_id: a.body.input_id });
      assert.equal(promote.status, 409, 'an input still preparing cannot be promoted');
      assert.equal(promote.body.error.code, 'state_conflict');

      const queue = await http(`${API}/sessions/${session.id}/queue`);
      assert.deepEqual(
        queue.body.data.map((i: any) => [i.id, i.attachment_status]),
        [
          [a.body.input_id, 'preparing'],
          [b.body.input_id, 'ready'],
        ],
        'both wait, the unready head first',
      );
      const turnsWhileStuck = await http(`${API}/sessions/${session.id}/turns?limit=100`);
      assert.equal(turnsWhileStuck.body.data.length, 1, 'only the warm-up turn exists');

      // The bytes come back: the recovery sweep retries the same preparation.
      writeFileSync(draftPath(draft.id), content);
      const ready = await untilReady(session.id, a.body.input_id);
      assert.equal(ready.attachment_error, null);
      const done = [warmUp];
      for (let turns = 0; turns < 2; turns++) {
        const completed = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && !done.includes(e.data.turn_id), 20_000);
        done.push(completed.data.turn_id);
      }
      const consumed = await query<{ id: string; seq: number }>(`SELECT i.id, t.seq FROM inputs i JOIN turns t ON t.id = i.turn_id WHERE i.id = ANY($1::uuid[]) ORDER BY t.seq`, [
        [a.body.input_id, b.body.input_id],
      ]);
      assert.deepEqual(
        consumed.map((row) => row.id),
        [a.body.input_id, b.body.input_id],
        'the input with the file ran first, the plain follow-up after it',
      );
    } finally {
      stream.close();
    }
  });

  it('a cancelled unready input unblocks the queue and keeps its file', async () => {
    const session = await createSession();
    const content = 'cancelled but kept';
    const draft = await uploadDraft(content, 'kept.txt');
    rmSync(draftPath(draft.id));
    const a = await postEvent(session.id, withFiles('will be cancelled', [draft.id]));
    const b = await sendMessage(session.id, 'runs instead');
    const cancel = await postEvent(session.id, { type: 'yuxi.session.input.cancel_input', input_id: a.body.input_id });
    assert.equal(cancel.status, 202);
    const ran = await until(async () => ((await inputOf(session.id, b.body.input_id)).status === 'consumed' ? true : undefined), { attempts: 150, intervalMs: 100 });
    assert.equal(ran, true, 'the follow-up behind the cancelled input runs');
    // Its file commit still finishes once the bytes are back (cancelling keeps received files).
    writeFileSync(draftPath(draft.id), content);
    const prepared = await untilReady(session.id, a.body.input_id);
    assert.equal(prepared.status, 'cancelled');
    assert.equal(prepared.attachments[0].status, 'ready');
    assert.equal(readFileSync(workdirPath(session.id, draft.id), 'utf8'), content);
  });

  it('retries with backoff: preparations that keep failing never starve a newer one', async () => {
    // More inputs whose uploads are lost for good than one sweep takes (16), all older than `late`.
    const stuck: { sessionId: string; inputId: string; fileId: string }[] = [];
    for (let i = 0; i < 17; i++) {
      const draft = await uploadDraft(`lost for good ${i}`, `lost-${i}.txt`);
      rmSync(draftPath(draft.id));
      const created = await http(`${API}/sessions`, {
        idempotencyKey: newKey('create'),
        body: { agent_id: 'default-chatbot', input: `stuck ${i}`, yuxi: { attachment_file_ids: [draft.id] } },
      });
      assert.equal(created.status, 201, created.text);
      stuck.push({ sessionId: created.body.id, inputId: created.body.yuxi.receipt.input_id, fileId: draft.id });
    }
    const content = 'back after a while';
    const draft = await uploadDraft(content, 'late.txt');
    rmSync(draftPath(draft.id));
    const session = await createSession();
    const late = await postEvent(session.id, withFiles('newer', [draft.id]));
    assert.equal(late.status, 202);
    const failed = await until(async () => ((await inputOf(session.id, late.body.input_id)).attachment_error ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(failed, true, 'its first attempt failed');
    writeFileSync(draftPath(draft.id), content);
    // The sweep tries it within seconds although the older ones fail on every try.
    const ready = await untilReady(session.id, late.body.input_id);
    assert.equal(ready.attachments[0].status, 'ready');
    const stillStuck = await Promise.all(stuck.map(({ sessionId, inputId }) => inputOf(sessionId, inputId)));
    assert.deepEqual(new Set(stillStuck.map((input) => input.attachment_status)), new Set(['preparing']), 'the lost ones are still preparing');

    // Given up: cancelled, then their files deleted (see the next test).
    for (const { sessionId, inputId, fileId } of stuck) {
      assert.equal((await postEvent(sessionId, { type: 'yuxi.session.input.cancel_input', input_id: inputId })).status, 202);
      const deleted = await http(`${API}/sessions/${sessionId}/attachments/${fileId}`, { method: 'DELETE' });
      assert.equal(deleted.status, 200, deleted.text);
    }
  });

  it('the attachment of a cancelled input can be deleted before its preparation finished, freeing the quota', async () => {
    // The file-limits replica allows 1 MiB per owner; 700 KiB are attached to an input whose upload is lost.
    const user = await signToken();
    const lost = await uploadDraft('l'.repeat(700 * 1024), 'lost.txt', { token: user });
    rmSync(draftPath(lost.id));
    const created = await http(`${API}/sessions`, {
      idempotencyKey: newKey('create'),
      key: user,
      body: { agent_id: 'default-chatbot', input: 'with a lost file', yuxi: { attachment_file_ids: [lost.id] } },
    });
    assert.equal(created.status, 201, created.text);
    const sessionId = created.body.id;
    const inputId = created.body.yuxi.receipt.input_id;
    const inputAs = async () => (await http(`${API}/sessions/${sessionId}/inputs/${inputId}`, { key: user })).body;
    assert.ok(await until(async () => ((await inputAs()).attachment_error ? true : undefined), { attempts: 100, intervalMs: 100 }), 'the preparation failed');
    const full = await upload('n'.repeat(400 * 1024), 'next.txt', { token: user, baseUrl: env.apiUrlFileLimits });
    assert.equal(full.status, 413, 'the attached file counts against the quota');
    const deleteIt = () => http(`${API}/sessions/${sessionId}/attachments/${lost.id}`, { method: 'DELETE', key: user });
    const whilePending = await deleteIt();
    assert.equal(whilePending.status, 409);
    assert.equal(whilePending.body.error.code, 'attachment_busy');

    const cancel = await http(`${API}/sessions/${sessionId}/events`, {
      key: user,
      idempotencyKey: newKey('cancel'),
      body: { events: [{ type: 'yuxi.session.input.cancel_input', input_id: inputId }] },
    });
    assert.equal(cancel.status, 202, cancel.text);
    const deleted = await deleteIt();
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { id: lost.id, object: 'yuxi.session.attachment.deleted', session_id: sessionId, deleted: true });
    assert.deepEqual((await http(`${API}/sessions/${sessionId}/attachments`, { key: user })).body.data, []);
    assert.equal(existsSync(workdirPath(sessionId, lost.id)), false);
    const fits = await upload('n'.repeat(400 * 1024), 'next.txt', { token: user, baseUrl: env.apiUrlFileLimits });
    assert.equal(fits.status, 201, `the quota is free again: ${fits.text}`);

    // Nothing is left to prepare: the preparation ended with the deletion, the sweep stops trying.
    const done = await inputAs();
    assert.equal(done.attachment_status, 'ready');
    assert.equal(done.status, 'cancelled');
    assert.deepEqual(done.attachment_file_ids, [lost.id], 'the input keeps what it was sent with');
    assert.deepEqual(done.attachments, []);
  });
});
