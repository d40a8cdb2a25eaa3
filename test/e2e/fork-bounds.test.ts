import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { PNG, uploadDraft } from '../support/files.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { SseStream } from '../support/sse.js';

// A fork at its edges (README "Fork"): the files of its source after the fork point are not the
// fork's; deleting a source and its only fork at once still releases the source's files; a fork's
// fork with a workspace of its own still belongs to its project, so a deleted project takes none.
// Rows are read with SQL only to observe state.

const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);
const image = (text: string) => [{ role: 'user', content: [{ type: 'input_text', text }, { type: 'input_image', image_url: `data:image/png;base64,${PNG.toString('base64')}` }] }];

describe('fork: bounds of what a fork holds', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((stream) => stream.close()));

  /** Creates a session (its first input given) and waits for its first turn to complete; its id and stream. */
  async function started(body: Record<string, unknown>): Promise<{ id: string; stream: SseStream }> {
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', ...body } });
    assert.equal(res.status, 201, res.text);
    const stream = await SseStream.open(res.body.id);
    streams.push(stream);
    await turnEnded(stream, 1);
    return { id: res.body.id, stream };
  }
  async function turnEnded(stream: SseStream, n: number): Promise<void> {
    await stream.waitFor(() => stream.events.filter((e) => TERMINAL.has(e.type)).length >= n, 60_000);
    const end = stream.events.filter((e) => TERMINAL.has(e.type))[n - 1]!;
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data));
  }
  const fork = (sessionId: string) => http(`${API}/sessions/${sessionId}/fork`, { body: {}, idempotencyKey: newKey('fork') });
  const bytes = async (url: string): Promise<number> => (await fetch(`${env.apiUrl}${url}`, { headers: { authorization: `Bearer ${env.apiKey}` } })).status;
  const imagesOf = async (sessionId: string): Promise<string[]> => {
    const items = (await http(`${API}/sessions/${sessionId}/items?order=asc&limit=100`)).body.data as any[];
    return items.flatMap((item) => (Array.isArray(item.content) ? item.content : [])).filter((part: any) => part.type === 'input_image').map((part: any) => part.file_id as string);
  };

  it('serves through the fork an image its source was sent up to the fork point (200), not one sent after it (404)', async () => {
    const source = await started({ input: image('before the fork') });
    const forked = await fork(source.id);
    assert.equal(forked.status, 201, forked.text);
    const res = await postEvent(source.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: image('after the fork') });
    assert.equal(res.status, 202, res.text);
    await turnEnded(source.stream, 2);
    const [before, later] = await imagesOf(source.id);
    assert.ok(before && later && before !== later, 'two images on the source');
    assert.equal(await bytes(`${API}/sessions/${source.id}/files/${later}/content`), 200, 'the source serves both');
    assert.equal(await bytes(`${API}/sessions/${forked.body.id}/files/${before}/content`), 200, 'inherited: served through the fork');
    assert.equal(await bytes(`${API}/sessions/${forked.body.id}/files/${later}/content`), 404, 'sent after the fork point: not the fork\'s');
    assert.deepEqual(await imagesOf(forked.body.id), [before]);
  });

  it('deleting a source and its only fork at the same time releases the source\'s image and attachment (every round)', async () => {
    const status = async (fileId: string): Promise<string | undefined> => (await query<{ status: string }>(`SELECT status FROM files WHERE id = $1`, [fileId]))[0]?.status;
    for (let round = 1; round <= 4; round += 1) {
      const draft = await uploadDraft(`notes of round ${round}\n`, 'notes.txt');
      const source = await started({ input: image(`round ${round}`), yuxi: { attachment_file_ids: [draft.id] } });
      const [inline] = await imagesOf(source.id);
      const forked = await fork(source.id);
      assert.equal(forked.status, 201, forked.text);
      const deletes = await Promise.all([source.id, forked.body.id].map((id) => http(`${API}/sessions/${id}`, { method: 'DELETE' })));
      assert.deepEqual(deletes.map((res) => res.status), [200, 200]);
      for (const fileId of [inline!, draft.id as string]) {
        const left = await status(fileId);
        assert.ok(left === undefined || left === 'deleting', `round ${round}: ${fileId} released with both sessions (${left})`);
      }
    }
  });

  it('a fork of a fork with a workspace of its own is still its project\'s: once the project is deleted, forking it is 404', async () => {
    const project = await http(`${API}/projects`, { body: { name: 'fork bounds project' } });
    assert.equal(project.status, 201, project.text);
    const source = await started({ project_id: project.body.id, environment: { type: 'openai_hosted' }, input: 'hello' });
    const forked = await fork(source.id);
    assert.equal(forked.status, 201, forked.text);
    assert.equal(forked.body.yuxi.project_id, project.body.id);
    assert.deepEqual(await query(`SELECT workdir_id FROM sessions WHERE id = $1`, [forked.body.id]), [{ workdir_id: forked.body.id }], 'a workdir of its own');
    const live = await fork(forked.body.id);
    assert.equal(live.status, 201, `a live project takes the fork's fork: ${live.text}`);
    assert.equal((await http(`${API}/projects/${project.body.id}`, { method: 'DELETE' })).status, 200);
    for (const id of [source.id, forked.body.id]) {
      const res = await fork(id);
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.error.code, 'not_found');
      // Nor does any of them take a new message, the fork with a workdir of its own included.
      const message = await postEvent(id, { type: 'agent.session.input.message', input: 'after the project\'s delete' });
      assert.equal(message.status, 409, message.text);
      assert.match(message.body.error.message, /project .* is deleted/);
    }
  });
});
