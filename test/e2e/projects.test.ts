import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { uploadDraft } from '../support/files.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { call, type Caller, newProductUser } from '../support/identity.js';
import { SseStream } from '../support/sse.js';

// Projects: an owner's named groups of sessions sharing one workdir. CRUD and paging on a fresh
// product user (its list holds only what this file creates), the soft delete and what it closes,
// and the shared workdir as the agent's file tools see it.

const PROJECTS = `${API}/projects`;

function assertError(res: { status: number; body: any; headers: Headers; text: string }, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(typeof res.body.error.type, 'string');
  assert.equal(typeof res.body.error.retryable, 'boolean');
  assert.equal(res.body.error.request_id, res.headers.get('x-request-id'));
  assert.equal(typeof res.body.error.details, 'object');
}

async function createProject(caller: Caller | null, body: object): Promise<any> {
  const res = caller ? await call(caller, PROJECTS, { body }) : await http(PROJECTS, { body });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function createSession(body: object): Promise<any> {
  const res = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'file-reader', ...body } });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

describe('projects', () => {
  const streams: SseStream[] = [];
  after(() => streams.forEach((s) => s.close()));

  async function completedTurns(sessionId: string, count: number): Promise<string[]> {
    const stream = await SseStream.open(sessionId);
    streams.push(stream);
    const completed = () => stream.events.filter((e) => e.type === 'agent.session.turn.completed');
    await stream.waitFor(() => completed().length >= count, 20_000);
    stream.close();
    return completed().map((e) => e.data.turn_id as string);
  }

  async function toolOutput(sessionId: string, turnId: string): Promise<any> {
    const items = (await http(`${API}/sessions/${sessionId}/turns/${turnId}/items?order=asc&limit=100`)).body.data;
    const output = items.find((i: any) => i.type === 'function_call_output');
    assert.ok(output, `a tool ran in turn ${turnId}`);
    return output;
  }

  it('creates, reads, lists in pages (both orders) and deletes projects of their owner', async () => {
    const { caller } = await newProductUser('project owner');
    const first = await createProject(caller, { name: 'Alpha', description: 'The first one.' });
    assert.equal(first.object, 'agent.project');
    assert.equal(first.name, 'Alpha');
    assert.equal(first.description, 'The first one.');
    assert.equal(typeof first.created_at, 'number');
    assert.equal(first.updated_at, first.created_at);
    assert.deepEqual(Object.keys(first).sort(), ['created_at', 'description', 'id', 'name', 'object', 'updated_at', 'yuxi']);
    assert.deepEqual(first.yuxi, { ttl: null }, 'no TTL unless the project sets one');
    const second = await createProject(caller, { name: 'Beta' });
    assert.equal(second.description, '', 'description defaults to empty');
    const third = await createProject(caller, { name: 'Gamma' });

    const got = await call(caller, `${PROJECTS}/${first.id}`);
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.body, first);

    const page1 = await call(caller, `${PROJECTS}?limit=2`);
    assert.equal(page1.status, 200, page1.text);
    assert.equal(page1.body.object, 'list');
    assert.deepEqual(
      page1.body.data.map((p: any) => p.id),
      [third.id, second.id],
      'newest first by default',
    );
    assert.equal(page1.body.first_id, third.id);
    assert.equal(page1.body.last_id, second.id);
    assert.equal(page1.body.has_more, true);
    const page2 = await call(caller, `${PROJECTS}?limit=2&after=${page1.body.last_id}`);
    assert.deepEqual(
      page2.body.data.map((p: any) => p.id),
      [first.id],
    );
    assert.equal(page2.body.has_more, false);
    const asc = await call(caller, `${PROJECTS}?order=asc&limit=10`);
    assert.deepEqual(
      asc.body.data.map((p: any) => p.id),
      [first.id, second.id, third.id],
    );

    const deleted = await call(caller, `${PROJECTS}/${second.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { id: second.id, object: 'agent.project', deleted: true });
    assertError(await call(caller, `${PROJECTS}/${second.id}`), 404, 'not_found');
    assertError(await call(caller, `${PROJECTS}/${second.id}`, { method: 'DELETE' }), 404, 'not_found');
    const remaining = await call(caller, `${PROJECTS}?order=asc`);
    assert.deepEqual(
      remaining.body.data.map((p: any) => p.id),
      [first.id, third.id],
      'a deleted project is off the list',
    );
    assertError(await call(caller, `${PROJECTS}?after=${second.id}`), 400, 'invalid_cursor');
    assertError(await call(caller, `${PROJECTS}?after=not-a-project`), 400, 'invalid_cursor');
  });

  it('refuses bad input with the standard error shape', async () => {
    assertError(await http(PROJECTS, { body: {} }), 422, 'validation_failed');
    assertError(await http(PROJECTS, { body: { name: '' } }), 422, 'validation_failed');
    assertError(await http(PROJECTS, { body: { name: 'x'.repeat(201) } }), 422, 'validation_failed');
    assertError(await http(PROJECTS, { body: { name: 42 } }), 422, 'validation_failed');
    assertError(await http(PROJECTS, { body: { name: null } }), 422, 'validation_failed');
    assertError(await http(PROJECTS, { body: { name: 'ok', description: 'd'.repeat(2001) } }), 422, 'validation_failed');
    assertError(await http(PROJECTS, { body: { name: 'ok', description: null } }), 422, 'validation_failed');
    const unknown = await http(PROJECTS, { body: { name: 'ok', color: 'blue' } });
    assertError(unknown, 422, 'validation_failed');
    assert.deepEqual(
      unknown.body.error.details.fields.map((f: any) => f.field),
      ['color'],
    );
    assertError(await http(PROJECTS, { rawBody: '{"name":' }), 422, 'invalid_json');
    assertError(await http(PROJECTS, { body: { name: 'ok' }, key: null }), 401, 'unauthorized');
    // Edge lengths are accepted.
    await createProject(null, { name: 'n'.repeat(200), description: 'd'.repeat(2000) });

    for (const id of ['not-a-uuid', randomUUID()]) {
      assertError(await http(`${PROJECTS}/${id}`), 404, 'not_found');
      assertError(await http(`${PROJECTS}/${id}`, { method: 'DELETE' }), 404, 'not_found');
      assertError(await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', project_id: id } }), 404, 'not_found');
    }
    assertError(await http(`${PROJECTS}?limit=0`), 422, 'validation_failed');
  });

  it('a session created in a project names it; a free label is no project (404, nothing stored)', async () => {
    const project = await createProject(null, { name: 'Labels' });
    const session = await createSession({ project_id: project.id });
    assert.equal(session.yuxi.project_id, project.id);
    const title = `free label ${randomUUID()}`;
    const label = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', title, project_id: 'my-label', input: 'hi' } });
    assertError(label, 404, 'not_found');
    // Nothing stored: the newest sessions (this file runs alone, in order) hold no session of that title.
    const newest = await http(`${API}/sessions?limit=50`);
    assert.equal(newest.status, 200, newest.text);
    assert.deepEqual(newest.body.data.filter((s: any) => s.yuxi.title === title), [], 'the refused create stored no session');
    const plain = await createSession({});
    assert.equal(plain.yuxi.project_id, null);
  });

  it('shares the workdir: a file attached in one session is listed and read by the file tools in every session of the project, and nowhere else', async () => {
    const project = await createProject(null, { name: 'Shared workdir' });
    const draft = await uploadDraft('The shared secret is 7777.', 'shared.txt');
    const a = await createSession({ project_id: project.id, input: 'Here is the file.', yuxi: { attachment_file_ids: [draft.id] } });
    await completedTurns(a.id, 1);

    // Session B of the same project lists A's file and reads it.
    const b = await createSession({ project_id: project.id, input: '[[tool:list_files]]' });
    const [listTurn] = await completedTurns(b.id, 1);
    const listed = JSON.parse((await toolOutput(b.id, listTurn!)).output);
    assert.deepEqual(
      listed.files.map((f: any) => [f.file_id, f.filename]),
      [[draft.id, 'shared.txt']],
    );
    const read = await postEvent(b.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: `[[tool:read_file {"file_id":"${draft.id}"}]]` });
    assert.equal(read.status, 202, read.text);
    const [, readTurn] = await completedTurns(b.id, 2);
    const output = await toolOutput(b.id, readTurn!);
    assert.equal(output.yuxi.success, true, output.output);
    assert.equal(output.output, 'The shared secret is 7777.');

    // The attachment list stays per session: B attached nothing.
    const attachments = await http(`${API}/sessions/${b.id}/attachments`);
    assert.equal(attachments.status, 200, attachments.text);
    assert.deepEqual(attachments.body.data, []);
    assert.deepEqual(
      (await http(`${API}/sessions/${a.id}/attachments`)).body.data.map((f: any) => f.id),
      [draft.id],
    );

    // A session outside the project (none, or another project) sees none of it.
    const other = await createProject(null, { name: 'Elsewhere' });
    for (const outside of [await createSession({ input: '[[tool:list_files]]' }), await createSession({ project_id: other.id, input: '[[tool:list_files]]' })]) {
      const [turn] = await completedTurns(outside.id, 1);
      assert.deepEqual(JSON.parse((await toolOutput(outside.id, turn!)).output).files, [], 'an empty workdir');
      const attempt = await postEvent(outside.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: `[[tool:read_file {"file_id":"${draft.id}"}]]` });
      assert.equal(attempt.status, 202, attempt.text);
      const [, readAttempt] = await completedTurns(outside.id, 2);
      const refused = await toolOutput(outside.id, readAttempt!);
      assert.equal(refused.yuxi.success, false, 'the file is not in this workdir');
      assert.match(refused.output, /has no file/);
    }

    // Deleting session A leaves its attachment with the project: B still reads it.
    assert.equal((await http(`${API}/sessions/${a.id}`, { method: 'DELETE' })).status, 200);
    const again = await postEvent(b.id, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: `[[tool:read_file {"file_id":"${draft.id}"}]]` });
    assert.equal(again.status, 202, again.text);
    const [, , readAfter] = await completedTurns(b.id, 3);
    const after = await toolOutput(b.id, readAfter!);
    assert.equal(after.yuxi.success, true, after.output);
    assert.equal(after.output, 'The shared secret is 7777.');
  });

  it('after a soft delete: 404 on read, off the list, no new sessions, no new messages to its sessions (409); history stays readable', async () => {
    const project = await createProject(null, { name: 'Doomed' });
    const session = await createSession({ project_id: project.id, input: 'hello before the delete' });
    await completedTurns(session.id, 1);
    const deleted = await http(`${PROJECTS}/${project.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);

    assertError(await http(`${PROJECTS}/${project.id}`), 404, 'not_found');
    const created = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', project_id: project.id, input: 'hi' } });
    assertError(created, 404, 'not_found');
    const message = await postEvent(session.id, { type: 'agent.session.input.message', input: 'after the delete' });
    assertError(message, 409, 'state_conflict');
    assert.match(message.body.error.message, /project .* is deleted/);

    const read = await http(`${API}/sessions/${session.id}`);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.yuxi.project_id, project.id);
    assert.equal(read.body.yuxi.queued_input_count, 0, 'the refused message was not queued');
    assert.equal((await http(`${API}/sessions/${session.id}/items`)).status, 200);
  });
});
