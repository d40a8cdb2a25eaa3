import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { signToken, until } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

const workdirPath = (sessionId: string, fileId: string) => path.join(env.storageDir, 'sessions', sessionId, 'files', fileId);
const withFiles = (text: string, fileIds: string[]) => ({ type: 'agent.session.input.message', input: text, yuxi: { mode: 'follow_up', attachment_file_ids: fileIds } });

async function createWithFiles(input: string, fileIds: string[]): Promise<any> {
  const res = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', input, yuxi: { attachment_file_ids: fileIds } } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function untilInput(sessionId: string, inputId: string, predicate: (input: any) => boolean, what: string): Promise<any> {
  const found = await until(async () => {
    const input = (await http(`${API}/sessions/${sessionId}/inputs/${inputId}`)).body;
    return predicate(input) ? input : undefined;
  }, { attempts: 200, intervalMs: 100 });
  assert.ok(found, what);
  return found;
}

const deleteAttachment = (sessionId: string, fileId: string, key?: string) => http(`${API}/sessions/${sessionId}/attachments/${fileId}`, { method: 'DELETE', key });

describe('files: a session\'s attachments', () => {
  it('lists attachments with their input, message and artifact URL, in pages, for the owner only', async () => {
    const a = await uploadDraft('alpha', 'alpha.txt');
    const b = await uploadDraft('{"beta":2}', 'beta.json');
    const session = await createWithFiles('first', [a.id, b.id]);
    const firstInput = await untilInput(session.id, session.yuxi.receipt.input_id, (i) => i.status === 'consumed', 'the first input ran');
    const c = await uploadDraft('gamma', '报告.md');
    const second = await postEvent(session.id, withFiles('second', [c.id]));
    const secondInput = await untilInput(session.id, second.body.input_id, (i) => i.status === 'consumed', 'the second input ran');

    const all = await http(`${API}/sessions/${session.id}/attachments?order=asc`);
    assert.equal(all.status, 200);
    assert.equal(all.body.object, 'list');
    assert.deepEqual(new Set(all.body.data.slice(0, 2).map((f: any) => f.id)), new Set([a.id, b.id]), 'the first submission\'s files first');
    assert.equal(all.body.data[2].id, c.id);
    const lastUserMessage = (input: any) => input.items.filter((i: any) => i.role === 'user').at(-1).id;
    for (const file of all.body.data) {
      const input = file.id === c.id ? secondInput : firstInput;
      assert.equal(file.object, 'yuxi.session.attachment');
      assert.equal(file.session_id, session.id);
      assert.equal(file.input_id, input.id);
      assert.equal(file.message_id, lastUserMessage(input));
      assert.equal(file.status, 'ready');
      assert.equal(file.url, `/api/v1/agents/sessions/${session.id}/files/${file.id}/content`);
    }
    const page1 = await http(`${API}/sessions/${session.id}/attachments?order=asc&limit=2`);
    assert.equal(page1.body.data.length, 2);
    assert.equal(page1.body.has_more, true);
    const page2 = await http(`${API}/sessions/${session.id}/attachments?order=asc&limit=2&after=${page1.body.last_id}`);
    assert.deepEqual(page2.body.data.map((f: any) => f.id), [c.id]);
    assert.equal(page2.body.has_more, false);
    const desc = await http(`${API}/sessions/${session.id}/attachments`);
    assert.equal(desc.body.data[0].id, c.id, 'newest first by default');
    const badCursor = await http(`${API}/sessions/${session.id}/attachments?after=0123456789abcdef0123456789abcdef`);
    assert.equal(badCursor.status, 400);
    assert.equal(badCursor.body.error.code, 'invalid_cursor');

    const stranger = await signToken();
    assert.equal((await http(`${API}/sessions/${session.id}/attachments`, { key: stranger })).status, 404);
    assert.equal((await http(all.body.data[2].url, { key: stranger })).status, 404);
    assert.equal((await deleteAttachment(session.id, c.id, stranger)).status, 404);
  });

  it('serves a workdir file\'s bytes at its artifact URL, as a download', async () => {
    const content = '# 季度报告\n\nRevenue grew.\n';
    const draft = await uploadDraft(content, '季度 "报告".md');
    const session = await createWithFiles('see file', [draft.id]);
    await untilInput(session.id, session.yuxi.receipt.input_id, (i) => i.attachment_status === 'ready', 'prepared');
    const res = await fetch(`${env.apiUrl}${API}/sessions/${session.id}/files/${draft.id}/content`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    assert.equal(res.status, 200);
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(bytes.toString('utf8'), content);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), draft.yuxi.sha256);
    assert.equal(res.headers.get('content-type'), 'text/markdown; charset=utf-8');
    assert.equal(res.headers.get('etag'), `"${draft.yuxi.sha256}"`);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const disposition = res.headers.get('content-disposition') ?? '';
    assert.match(disposition, /^attachment; filename="[ -~]+"; filename\*=UTF-8''/);
    assert.equal(decodeURIComponent(disposition.split("UTF-8''")[1]!), '季度 _报告_.md');
    assert.equal((await http(`${API}/sessions/${session.id}/files/0123456789abcdef0123456789abcdef/content`)).status, 404);
  });

  it('refuses to delete while preparation is unfinished, while its input is pending, while a turn is active; then deletes record and bytes', async () => {
    // Unfinished preparation: the upload's bytes are missing, so the input stays preparing.
    const stuck = await uploadDraft('stuck for now', 'stuck.txt');
    rmSync(path.join(env.storageDir, 'drafts', stuck.id));
    const stuckSession = await createWithFiles('stuck', [stuck.id]);
    await untilInput(stuckSession.id, stuckSession.yuxi.receipt.input_id, (i) => i.attachment_error !== null, 'the preparation failed once');
    const preparing = await deleteAttachment(stuckSession.id, stuck.id);
    assert.equal(preparing.status, 409);
    assert.equal(preparing.body.error.code, 'attachment_busy');
    assert.match(preparing.body.error.message, /preparation/);
    const notReady = await http(`${API}/sessions/${stuckSession.id}/files/${stuck.id}/content`);
    assert.equal(notReady.status, 409);
    assert.equal(notReady.body.error.code, 'file_not_ready');
    writeFileSync(path.join(env.storageDir, 'drafts', stuck.id), 'stuck for now');

    // A turn is active: the file of the consumed first input cannot go while the second turn runs.
    const first = await uploadDraft('first file', 'first.txt');
    const session = await createWithFiles('quick one', [first.id]);
    const stream = await SseStream.open(session.id);
    try {
      const firstTurn = (await stream.waitForType('agent.session.turn.completed', undefined, 20_000)).data.turn_id;
      const slow = await postEvent(session.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: 'a slow answer [[delay:1000]] one two three four five six seven eight' });
      const queuedFile = await uploadDraft('waits in the queue', 'queued.txt');
      const queued = await postEvent(session.id, withFiles('queued behind', [queuedFile.id]));
      const slowTurn = (await stream.waitFor((e) => e.type === 'agent.session.turn.in_progress' && e.data.turn_id !== firstTurn, 20_000)).data.turn_id;
      const during = await deleteAttachment(session.id, first.id);
      assert.equal(during.status, 409);
      assert.equal(during.body.error.code, 'attachment_busy');
      assert.match(during.body.error.message, /turn of the session is active/);

      // A pending input: cancel the slow turn (the queue pauses behind it), its attachment stays.
      await untilInput(session.id, queued.body.input_id, (i) => i.attachment_status === 'ready', 'the queued file is prepared');
      assert.equal((await postEvent(session.id, { type: 'agent.session.input.cancel' })).status, 202);
      await stream.waitForType('agent.session.turn.cancelled', slowTurn, 20_000);
      assert.equal((await http(`${API}/sessions/${session.id}`)).body.yuxi.queue_paused, true);
      const pending = await deleteAttachment(session.id, queuedFile.id);
      assert.equal(pending.status, 409);
      assert.match(pending.body.error.message, /still pending/);
      assert.equal(slow.status, 202);

      // Idle, nothing pending for it: deleted, record and bytes; the input keeps its ids.
      const deleted = await deleteAttachment(session.id, first.id);
      assert.equal(deleted.status, 200, deleted.text);
      assert.deepEqual(deleted.body, { id: first.id, object: 'yuxi.session.attachment.deleted', session_id: session.id, deleted: true });
      assert.equal(existsSync(workdirPath(session.id, first.id)), false, 'the bytes are gone');
      const listed = (await http(`${API}/sessions/${session.id}/attachments?limit=100`)).body.data.map((f: any) => f.id);
      assert.ok(!listed.includes(first.id), 'no placeholder is left');
      const input = (await http(`${API}/sessions/${session.id}/inputs/${session.yuxi.receipt.input_id}`)).body;
      assert.deepEqual(input.attachment_file_ids, [first.id], 'the input keeps what it was sent with');
      assert.deepEqual(input.attachments, []);
      assert.equal((await http(`${API}/sessions/${session.id}/files/${first.id}/content`)).status, 404);
      assert.equal((await deleteAttachment(session.id, first.id)).status, 404, 'deleting twice: gone');
      assert.equal((await http(`${API}/files/${first.id}`)).status, 404, 'not a draft again either');
      assert.equal((await postEvent(session.id, { type: 'yuxi.session.input.continue' })).status, 202);
      await untilInput(session.id, queued.body.input_id, (i) => i.status === 'consumed', 'the queue continues');
    } finally {
      stream.close();
    }
  });
});
