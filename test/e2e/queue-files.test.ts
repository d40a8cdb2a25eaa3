import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { PNG, uploadDraft } from '../support/files.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { type SseEvent, SseStream } from '../support/sse.js';

/**
 * The input queue and the files of a workdir, seen through the public API. A turn that waits for a
 * client tool result holds its session for as long as a test wants (an explicit follow-up queues
 * behind it, and a cancel ends it at once, pausing the queue), so nothing here depends on how fast a
 * model answered. Preparations are held up by taking a draft's bytes away, and let go by putting
 * them back, as a storage outage would.
 */
describe('queue and files', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  /** Scripted, with a client-executed function and the file tools. */
  let agentId: string;
  before(async () => {
    agentId = (
      await putAgent({
        model: 'scripted:echo',
        tools: [
          { type: 'function', name: 'client_fn', description: 'Done by the client', parameters: { type: 'object', properties: {} } },
          { type: 'builtin', name: 'list_files' },
          { type: 'builtin', name: 'read_file' },
        ],
      })
    ).id;
  });

  const draftPath = (fileId: string): string => path.join(env.storageDir, 'drafts', fileId);
  const input = async (sessionId: string, inputId: string): Promise<any> => (await http(`${API}/sessions/${sessionId}/inputs/${inputId}`)).body;
  const turns = async (sessionId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/turns?order=asc&limit=100`)).body.data;
  const turnItems = async (sessionId: string, turnId: string): Promise<any[]> => (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
  /** Polls until `check` holds (bounded: `tries` reads, 100 ms apart). */
  const until = async <T>(read: () => Promise<T>, check: (value: T) => boolean, what: string, tries = 300): Promise<T> => {
    for (let i = 0; i < tries; i += 1) {
      const value = await read();
      if (check(value)) return value;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const followUp = (sessionId: string, text: string, fileIds: string[] = []) =>
    postEvent(sessionId, { type: 'agent.session.input.message', input: text, yuxi: { mode: 'follow_up', ...(fileIds.length > 0 ? { attachment_file_ids: fileIds } : {}) } });
  const createProject = async (name: string): Promise<string> => {
    const res = await http(`${API}/projects`, { body: { name } });
    assert.equal(res.status, 201, res.text);
    return res.body.id;
  };

  /** A session whose first turn waits for the client's result of `client_fn`. */
  const waitingForClient = async (extra: Record<string, unknown> = {}): Promise<{ sessionId: string; stream: SseStream; waiting: SseEvent }> => {
    const res = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: agentId, input: '[[tool:client_fn {}]]', ...extra } });
    assert.equal(res.status, 201, res.text);
    const stream = await SseStream.open(res.body.id);
    streams.push(stream);
    const waiting = await stream.waitFor((e) => e.type === 'yuxi.session.turn.waiting' && e.data.waitpoint?.kind === 'client_tool', 30_000);
    return { sessionId: res.body.id, stream, waiting };
  };
  const clientResult = (sessionId: string, waiting: SseEvent) =>
    postEvent(sessionId, { type: 'tool_result', turn_id: waiting.data.turn_id, call_id: waiting.data.waitpoint.tool_calls[0].call_id, success: true, output: 'done' });
  /** Cancels the waiting turn (it ends at once) and checks that the queue paused behind it. */
  const cancelWaiting = async (sessionId: string, stream: SseStream, waiting: SseEvent): Promise<void> => {
    assert.equal((await postEvent(sessionId, { type: 'agent.session.input.cancel' })).status, 202);
    await stream.waitForType('agent.session.turn.cancelled', waiting.data.turn_id, 20_000);
    assert.equal((await http(`${API}/sessions/${sessionId}/queue`)).body.paused, true);
  };

  it('a follow-up promoted in a paused queue becomes a steer and the queue stays paused until continued', async () => {
    const { sessionId, stream, waiting } = await waitingForClient();
    const old = await followUp(sessionId, 'the old follow-up');
    assert.equal(old.status, 202, old.text);
    await cancelWaiting(sessionId, stream, waiting);

    const promote = await postEvent(sessionId, { type: 'yuxi.session.input.promote', input_id: old.body.input_id });
    assert.equal(promote.status, 202, promote.text);
    const queue = (await http(`${API}/sessions/${sessionId}/queue`)).body;
    assert.equal(queue.paused, true, 'still paused');
    assert.equal((await http(`${API}/sessions/${sessionId}`)).body.yuxi.queue_paused, true);
    const promoted = await input(sessionId, old.body.input_id);
    assert.equal(promoted.mode, 'steer');
    assert.equal(promoted.status, 'pending');

    const cont = await postEvent(sessionId, { type: 'yuxi.session.input.continue' });
    assert.equal(cont.status, 202, cont.text);
    const consumed = await until(() => input(sessionId, old.body.input_id), (i) => i.status === 'consumed', 'the promoted input to run');
    // It ran only once the queue was continued: its turn's first event comes after the continue's receipt.
    const continued = stream.events.findIndex((e) => e.type === 'yuxi.session.event.accepted' && e.data.receipt.event_id === cont.body.event_id);
    await stream.waitForType('agent.session.turn.completed', consumed.turn_id, 20_000);
    const started = stream.events.findIndex((e) => e.type === 'agent.session.turn.created' && e.data.turn_id === consumed.turn_id);
    assert.ok(continued !== -1 && started > continued, `the turn (event ${started}) after the continue (event ${continued})`);
    assert.deepEqual((await turns(sessionId)).map((t) => t.status), ['cancelled', 'completed']);
  });

  it('a message to a paused queue whose attachments are not ready yet keeps the old queue waiting behind it', async () => {
    const { sessionId, stream, waiting } = await waitingForClient();
    const old = await followUp(sessionId, 'the old follow-up');
    assert.equal(old.status, 202, old.text);
    await cancelWaiting(sessionId, stream, waiting);

    const draft = await uploadDraft('late bytes', 'late.txt');
    rmSync(draftPath(draft.id));
    const fresh = await followUp(sessionId, 'the fresh message', [draft.id]);
    assert.equal(fresh.status, 202, fresh.text);
    const failing = await until(() => input(sessionId, fresh.body.input_id), (i) => i.attachment_error !== null, 'a failed preparation');
    assert.equal(failing.attachment_status, 'preparing');

    // Whether the old queue waited is read once the fresh message has run: a claim takes it only
    // after its readiness, so an old follow-up that ran while it was preparing has the earlier turn.
    writeFileSync(draftPath(draft.id), 'late bytes');
    const oldDone = await until(() => input(sessionId, old.body.input_id), (i) => i.status === 'consumed', 'the old follow-up to run');
    const freshDone = await until(() => input(sessionId, fresh.body.input_id), (i) => i.status === 'consumed', 'the fresh message to run');
    const list = await until(() => turns(sessionId), (t) => t.length === 3 && t.every((turn) => turn.status !== 'in_progress'), 'both turns to end');
    assert.deepEqual(list.map((t) => t.id), [waiting.data.turn_id, freshDone.turn_id, oldDone.turn_id], 'the old queue waited: the fresh message ran first, alone, then the old queue');
  });

  it('a cancelled input\'s files stay in the shared workdir: the tools of its session and of the project\'s others list and read them', async () => {
    const projectId = await createProject('Cancelled files');
    const { sessionId, stream, waiting } = await waitingForClient({ project_id: projectId });
    const draft = await uploadDraft('kept for the tools', 'kept.txt');
    const attached = await followUp(sessionId, 'with a file', [draft.id]);
    assert.equal(attached.status, 202, attached.text);
    const cancelled = await postEvent(sessionId, { type: 'yuxi.session.input.cancel_input', input_id: attached.body.input_id });
    assert.equal(cancelled.status, 202, cancelled.text);
    await until(() => input(sessionId, attached.body.input_id), (i) => i.status === 'cancelled' && i.attachment_status === 'ready', 'the cancelled input\'s preparation to finish');
    assert.equal((await clientResult(sessionId, waiting)).status, 202);
    await stream.waitForType('agent.session.turn.completed', waiting.data.turn_id, 20_000);

    const read = `[[tool:list_files]] [[tool:read_file {"file_id":"${draft.id}"}]]`;
    const other = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: agentId, project_id: projectId, input: read } });
    assert.equal(other.status, 201, other.text);
    const again = await followUp(sessionId, read);
    for (const [id, inputId] of [[sessionId, again.body.input_id], [other.body.id, other.body.yuxi.receipt.input_id]] as const) {
      const done = await until(() => input(id, inputId), (i) => i.status === 'consumed', 'the reading input to run');
      await until(() => turns(id), (t) => t.find((turn) => turn.id === done.turn_id)?.status === 'completed', 'the reading turn to complete');
      const outputsOfTurn = (await turnItems(id, done.turn_id)).filter((i) => i.type === 'function_call_output');
      assert.equal(outputsOfTurn.length, 2);
      assert.deepEqual(JSON.parse(outputsOfTurn[0].output).files.map((f: any) => [f.file_id, f.filename]), [[draft.id, 'kept.txt']]);
      assert.equal(outputsOfTurn[1].output, 'kept for the tools');
    }
  });

  it('inline images are never in list_files, in their session or another of its project, and read_file does not find them', async () => {
    const projectId = await createProject('Inline images');
    const draft = await uploadDraft('an attachment', 'attached.txt');
    const res = await http(`${API}/sessions`, {
      idempotencyKey: newKey('create'),
      body: {
        agent_id: agentId,
        project_id: projectId,
        input: [{ role: 'user', content: [{ type: 'input_text', text: '[[tool:list_files]]' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG.toString('base64')}` }] }],
        yuxi: { attachment_file_ids: [draft.id] },
      },
    });
    assert.equal(res.status, 201, res.text);
    const sessionId = res.body.id as string;
    const first = await until(() => input(sessionId, res.body.yuxi.receipt.input_id), (i) => i.status === 'consumed', 'the first input to run');
    const image = first.items.flatMap((i: any) => i.content ?? []).find((c: any) => c.type === 'input_image');
    assert.match(image?.file_id ?? '', /^[0-9a-f]{32}$/, 'the image is a stored session file');

    const listedIn = async (id: string, inputId: string): Promise<string[]> => {
      const done = await until(() => input(id, inputId), (i) => i.status === 'consumed', 'the listing input to run');
      const list = await until(() => turnItems(id, done.turn_id), (found) => found.some((i) => i.type === 'function_call_output'), 'the listing output');
      return JSON.parse(list.find((i) => i.type === 'function_call_output').output).files.map((f: any) => f.file_id);
    };
    assert.deepEqual(await listedIn(sessionId, res.body.yuxi.receipt.input_id), [draft.id]);
    const sibling = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: agentId, project_id: projectId, input: '[[tool:list_files]]' } });
    assert.equal(sibling.status, 201, sibling.text);
    assert.deepEqual(await listedIn(sibling.body.id, sibling.body.yuxi.receipt.input_id), [draft.id]);

    const readImage = await followUp(sessionId, `[[tool:read_file {"file_id":"${image.file_id}"}]]`);
    const done = await until(() => input(sessionId, readImage.body.input_id), (i) => i.status === 'consumed', 'the read to run');
    const output = await until(
      async () => (await turnItems(sessionId, done.turn_id)).find((i) => i.type === 'function_call_output'),
      (found) => found !== undefined,
      'the read output',
    );
    assert.equal(output.yuxi.success, false);
    assert.match(output.output, /has no file/);
  });

  for (const ending of ['an archive', 'a project delete'] as const) {
    it(`an unfinished preparation completes after ${ending}, and starts no run`, async () => {
      const projectId = ending === 'a project delete' ? await createProject('Deleted with a preparation') : undefined;
      const { sessionId, stream, waiting } = await waitingForClient(projectId ? { project_id: projectId } : {});
      const draft = await uploadDraft('bytes come back', 'back.txt');
      rmSync(draftPath(draft.id));
      const attached = await followUp(sessionId, 'with a file', [draft.id]);
      assert.equal(attached.status, 202, attached.text);
      await until(() => input(sessionId, attached.body.input_id), (i) => i.attachment_error !== null, 'a failed preparation');
      assert.equal((await postEvent(sessionId, { type: 'yuxi.session.input.cancel_input', input_id: attached.body.input_id })).status, 202);
      assert.equal((await clientResult(sessionId, waiting)).status, 202);
      await stream.waitForType('agent.session.turn.completed', waiting.data.turn_id, 20_000);

      if (ending === 'an archive') {
        const archived = await http(`${API}/sessions/${sessionId}/archive`, { method: 'POST' });
        assert.equal(archived.status, 200, archived.text);
      } else {
        const deleted = await http(`${API}/projects/${projectId}`, { method: 'DELETE' });
        assert.equal(deleted.status, 200, deleted.text);
      }
      writeFileSync(draftPath(draft.id), 'bytes come back');
      await until(() => input(sessionId, attached.body.input_id), (i) => i.attachment_status === 'ready', 'the preparation to finish');
      // The readiness nudges the session; the worker logs what that dispatch ran once it claimed all
      // it could. A run the late preparation started would have been claimed before this line.
      const dispatched = await until(async () => readyDispatchLine(attached.body.input_id), (line) => line !== undefined, 'the ready input\'s dispatch to end', 200);
      assert.equal(dispatched!.session_id, sessionId);
      assert.deepEqual((await turns(sessionId)).map((t) => t.id), [waiting.data.turn_id], 'no run started');
      assert.match(dispatched!.msg, /ran 0 turn\(s\)$/);
      const ready = await input(sessionId, attached.body.input_id);
      assert.equal(ready.status, 'cancelled');
      assert.equal(ready.attachment_error, null);
      const attachment = (await http(`${API}/sessions/${sessionId}/attachments`)).body.data.find((f: any) => f.id === draft.id);
      assert.equal(attachment?.status, 'ready');
      const bytes = await fetch(`${env.apiUrl}${API}/sessions/${sessionId}/files/${draft.id}/content`, { headers: { authorization: `Bearer ${env.apiKey}` } });
      assert.equal(bytes.status, 200);
      assert.equal(await bytes.text(), 'bytes come back');
      const session = (await http(`${API}/sessions/${sessionId}`)).body;
      assert.equal(session.yuxi.queued_input_count, 0);
    });
  }

  it('a blob whose removal failed is removed by a later sweep', async () => {
    const draft = await uploadDraft('stuck bytes', 'stuck-blob.txt');
    const blob = draftPath(draft.id);
    assert.equal(readFileSync(blob, 'utf8'), 'stuck bytes');
    // A directory where the blob was: the store's delete fails (as it would on a broken volume).
    rmSync(blob);
    mkdirSync(blob);
    writeFileSync(path.join(blob, 'inside'), 'x');
    const deleted = await http(`${API}/files/${draft.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal((await http(`${API}/files/${draft.id}`)).status, 404, 'gone for the client at once');
    // The sweep meets the failure too, and says so (the worker's log), keeping the tombstone.
    await until(async () => workerLogMentions(draft.id), (found) => found, 'the sweep to fail on the blob', 200);
    assert.ok(existsSync(blob), 'still there after a failed sweep');

    // The store works again: a later sweep retries and removes the blob.
    rmSync(blob, { recursive: true });
    writeFileSync(blob, 'stuck bytes');
    await until(async () => existsSync(blob), (exists) => !exists, 'a later sweep to remove the blob', 200);
  });
});

/** The worker's log lines (TEST_LOG_DIR/worker.log). */
function workerLog(): string[] {
  const dir = process.env.TEST_LOG_DIR;
  if (!dir) throw new Error('TEST_LOG_DIR is not set: run the suite with npm test');
  return readFileSync(path.join(dir, 'worker.log'), 'utf8').split('\n');
}

/** Whether the worker's log says the sweep could not remove this file's bytes. */
function workerLogMentions(fileId: string): boolean {
  return workerLog().some((line) => line.includes(fileId) && line.includes('bytes not removed yet'));
}

/** The worker's line (JSON) that ends the dispatch nudged by this input's attachments becoming ready. */
function readyDispatchLine(inputId: string): { session_id: string; msg: string } | undefined {
  const line = workerLog().find((l) => l.includes(`input ${inputId}: attachments ready; its dispatch ran`));
  return line === undefined ? undefined : JSON.parse(line);
}
