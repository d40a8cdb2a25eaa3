import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { uploadDraft } from '../support/files.js';
import { API, http, newKey, sendMessage } from '../support/http.js';
import { asEndUser, call, createKey, createSessionAs, newProductUser, signToken, until } from '../support/identity.js';
import { completedFollowUp } from '../support/scenarios.js';
import { direct } from '../support/sdk.js';
import { SseStream } from '../support/sse.js';

// GET /sessions/{id}/storage on the suite's stack: its rows are what the session's lists and its
// event stream return, its bytes grow with a turn, an attached file counts at its size, a fork
// counts its own rows only, and it is the owner's alone (404 otherwise).

const TABLES = ['items', 'events', 'inputs', 'turns', 'runs', 'steps', 'model_requests'] as const;

/** Waits until the session has `count` turns, every one completed (bounded). */
async function turnsCompleted(sessionId: string, count: number): Promise<any[]> {
  const turns = await until(
    async () => {
      const res = await http(`${API}/sessions/${sessionId}/turns?order=asc&limit=100`);
      const data = res.body.data as any[];
      return data.length === count && data.every((t) => t.status === 'completed') ? data : undefined;
    },
    { attempts: 300, intervalMs: 100 },
  );
  assert.ok(turns, `${count} completed turns`);
  return turns;
}

async function storage(sessionId: string, key?: string): Promise<any> {
  const res = await http(`${API}/sessions/${sessionId}/storage`, { key });
  assert.equal(res.status, 200, res.text);
  return res.body;
}

/** Every item the session's list returns (at most 100: the test writes fewer). */
async function listedItems(sessionId: string): Promise<any[]> {
  const res = await http(`${API}/sessions/${sessionId}/items?order=asc&limit=100`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.has_more, false);
  return res.body.data;
}

describe('session storage: GET /sessions/{id}/storage', () => {
  it('counts the rows the lists and the stream return, grows with a turn, counts an attached file, and a fork\'s own rows only', async () => {
    const content = 'storage accounting\n'.repeat(50);
    const draft = await uploadDraft(content, 'notes.txt');
    const created = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', input: 'first', yuxi: { attachment_file_ids: [draft.id] } } });
    assert.equal(created.status, 201, created.text);
    const sessionId: string = created.body.id;
    await turnsCompleted(sessionId, 1);
    for (const [n, text] of ['second', 'third'].entries()) {
      assert.equal((await sendMessage(sessionId, text)).status, 202);
      await turnsCompleted(sessionId, n + 2);
    }

    const before = await storage(sessionId);
    assert.equal(before.object, 'yuxi.session.storage');
    assert.equal(before.session_id, sessionId);
    const items = await listedItems(sessionId);
    assert.equal(before.items.rows, items.length, 'items: what GET …/items returns');
    assert.equal(before.items.rows, 6, 'a user and an assistant message per echo turn');
    const turns = await turnsCompleted(sessionId, 3);
    assert.equal(before.turns.rows, turns.length);
    assert.equal(before.inputs.rows, 3, 'one input per message');
    const details = await Promise.all(turns.map(async (t) => (await http(`${API}/sessions/${sessionId}/turns/${t.id}`)).body));
    assert.equal(before.runs.rows, details.reduce((sum, t) => sum + t.yuxi.runs.length, 0), 'runs: the turns\' runs');
    assert.deepEqual(before.files, { count: 1, bytes: Buffer.byteLength(content) }, 'the attachment at its uploaded size');
    assert.equal(before.workspace, null, 'no environment, no workspace');
    for (const table of ['items', 'events', 'inputs', 'turns', 'runs'] as const) assert.ok(before[table].bytes > 0, `${table} bytes`);
    const rowBytes = TABLES.reduce((sum, table) => sum + before[table].bytes, 0);
    assert.equal(before.total_bytes, rowBytes + before.files.bytes);
    assert.ok(Math.abs(before.measured_at - Date.now() / 1000) < 60, 'measured now, in Unix seconds');

    // The durable events the stream replays from the start: 1..rows, each once.
    const stream = await SseStream.open(sessionId);
    try {
      assert.equal(stream.status, 200);
      await stream.waitFor((e) => e.data?.yuxi?.seq === before.events.rows);
      const seqs = stream.events.map((e) => e.data?.yuxi?.seq).filter((seq): seq is number => typeof seq === 'number');
      assert.deepEqual(seqs, Array.from({ length: before.events.rows }, (_, i) => i + 1), 'events: the stream\'s durable events');
    } finally {
      stream.close();
    }

    // A known write: a message of 2,000 random hex characters (nothing for Postgres' compression to find).
    const fourth = randomBytes(1000).toString('hex');
    assert.equal((await sendMessage(sessionId, fourth)).status, 202);
    await turnsCompleted(sessionId, 4);
    const after = await direct.sessions.storage(sessionId);
    assert.equal(after.items.rows, before.items.rows + 2);
    assert.equal(after.items.rows, (await listedItems(sessionId)).length);
    assert.equal(after.turns.rows, 4);
    assert.equal(after.inputs.rows, 4);
    assert.ok(after.events.rows > before.events.rows);
    for (const table of ['items', 'events', 'inputs', 'turns', 'runs'] as const) assert.ok(after[table].bytes > before[table].bytes, `${table} bytes grew`);
    assert.ok(after.items.bytes - before.items.bytes >= fourth.length, 'items grew by at least the message they hold');
    assert.ok(after.inputs.bytes - before.inputs.bytes >= fourth.length, 'inputs grew by at least the message received');
    assert.ok(after.total_bytes > before.total_bytes);
    assert.deepEqual(after.files, before.files);

    // A fork shares the history by reference: its own rows are none of it.
    const fork = await direct.sessions.fork(sessionId);
    const forked = await storage(fork.id);
    assert.ok((await listedItems(fork.id)).length >= after.items.rows, 'the fork lists the inherited history');
    for (const table of ['items', 'inputs', 'turns', 'runs', 'steps'] as const) assert.deepEqual(forked[table], { rows: 0, bytes: 0 }, `a fork's own ${table}`);
    assert.deepEqual(forked.files, { count: 0, bytes: 0 });
    const source = await storage(sessionId);
    for (const table of ['items', 'inputs', 'turns', 'runs'] as const) assert.deepEqual(source[table], after[table], `the source's ${table} unchanged by the fork`);
  });

  it('is 404 for another owner\'s session and an unknown one', async () => {
    const sessionId: string = (await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot' } })).body.id;
    const own = await storage(sessionId);
    assert.equal(own.items.rows, 0);
    assert.equal(own.turns.rows, 0);
    const stranger = await signToken();
    for (const [id, key] of [[sessionId, stranger], [randomUUID(), undefined], ['not-a-session', undefined]] as const) {
      const res = await http(`${API}/sessions/${id}/storage`, { key });
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.error.code, 'not_found');
    }
  });

  it('is 404 for another end user of the same app, and for a deleted session from the moment of deletion', async () => {
    const { userId } = await newProductUser('storage app owner');
    const appKey = await createKey({ user_id: userId, app_id: `app-storage-${randomUUID().slice(0, 8)}` });
    const app = { name: 'storage app key', token: appKey.secret };
    const y = asEndUser(app, `end-user-y-${randomUUID()}`);
    const x = asEndUser(app, `end-user-x-${randomUUID()}`);
    const session = await createSessionAs(y);
    assert.equal((await call(y, `${API}/sessions/${session.id}/storage`)).status, 200, 'its end user reads it');
    for (const other of [x, asEndUser(app, undefined)]) {
      const res = await call(other, `${API}/sessions/${session.id}/storage`);
      assert.equal(res.status, 404, `${other.name}: ${res.text}`);
      assert.equal(res.body.error.code, 'not_found');
    }

    const own: string = (await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', input: 'to delete' } })).body.id;
    await turnsCompleted(own, 1);
    await storage(own);
    assert.equal((await http(`${API}/sessions/${own}`, { method: 'DELETE' })).status, 200);
    const gone = await http(`${API}/sessions/${own}/storage`);
    assert.equal(gone.status, 404, gone.text);
    assert.equal(gone.body.error.code, 'not_found');
  });

  it('counts a workspace it owns, and a fork\'s workspace as inherited until the fork commits its own version', async () => {
    const created = await http(`${API}/sessions`, { idempotencyKey: newKey('env'), body: { agent_id: 'default-chatbot', environment: { type: 'openai_hosted' } } });
    assert.equal(created.status, 201, created.text);
    const tool = (name: string, args: object): string => `[[tool:${name} ${JSON.stringify(args)}]]`;
    const source = { id: created.body.id as string, stream: await SseStream.open(created.body.id) };
    const streams = [source.stream];
    try {
      const content = 'workspace bytes\n'.repeat(64);
      await completedFollowUp(source, tool('write_file', { path: 'a.txt', content }));
      const own = await storage(source.id);
      assert.ok(own.workspace, 'an environment made a workspace');
      assert.equal(own.workspace.shared, false);
      assert.equal(own.workspace.inherited, false);
      assert.ok(own.workspace.bytes >= Buffer.byteLength(content), 'the written file is in the head version');
      assert.ok(own.workspace.versions.rows >= 1);
      const rowBytes = TABLES.reduce((sum, table) => sum + own[table].bytes, 0);
      assert.equal(own.total_bytes, rowBytes + own.files.bytes + own.workspace.bytes + own.workspace.versions.bytes, 'its own workspace is in the total');

      const forked = await http(`${API}/sessions/${source.id}/fork`, { idempotencyKey: newKey('fork'), body: {} });
      assert.equal(forked.status, 201, forked.text);
      const fork = { id: forked.body.id as string, stream: await SseStream.open(forked.body.id) };
      streams.push(fork.stream);
      const branched = await storage(fork.id);
      assert.ok(branched.workspace, 'the fork branched the workspace');
      assert.deepEqual([branched.workspace.inherited, branched.workspace.shared], [true, false]);
      assert.equal(branched.workspace.bytes, own.workspace.bytes, 'shown: the source\'s head');
      assert.deepEqual(branched.workspace.versions, { rows: 0, bytes: 0 });
      const forkRows = TABLES.reduce((sum, table) => sum + branched[table].bytes, 0);
      assert.equal(branched.total_bytes, forkRows + branched.files.bytes, 'the inherited workspace is left out of the total');

      await completedFollowUp(fork, tool('write_file', { path: 'b.txt', content: 'the fork\n' }));
      const committed = await storage(fork.id);
      assert.equal(committed.workspace.inherited, false, 'its own version now');
      assert.ok(committed.workspace.versions.rows >= 1);
      const committedRows = TABLES.reduce((sum, table) => sum + committed[table].bytes, 0);
      assert.equal(committed.total_bytes, committedRows + committed.files.bytes + committed.workspace.bytes + committed.workspace.versions.bytes);
    } finally {
      streams.forEach((stream) => stream.close());
    }
  });
});
