import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { createSessionWith } from '../support/agents.js';
import { query } from '../support/db.js';
import { uploadDraft } from '../support/files.js';
import { API, createSession, http, type HttpResult, newKey, sendMessage } from '../support/http.js';
import { bootstrap, call, type Caller, createSessionAs, newProductUser, until } from '../support/identity.js';
import { OpenApiSchemas } from '../support/openapi-schema.js';
import { SseStream } from '../support/sse.js';
import { loadFromRoot, type StackModule } from '../support/stack-scripts.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

// POST /sessions/{id}/fork through the public API on the real stack (sessions without an
// environment, the scripted echo model): the new session's shape, the fork point's rules, the
// idempotency of the route, the list filter, the fork's own stream and webhook, its own turns,
// delete of the source, and forks of forks. Rows are read with SQL only to observe state.

const TERMINAL = ['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled'];

let documented: Promise<OpenApiSchemas> | undefined;

/** Every answer of the route is one it declares, its body conforms to the declared schema, and error details name documented keys only. */
async function conforms(res: HttpResult): Promise<HttpResult> {
  const schemas = await (documented ??= OpenApiSchemas.live());
  const response = schemas.document.paths[`${API}/sessions/{session_id}/fork`].post.responses[String(res.status)];
  assert.ok(response, `the fork route answered ${res.status}, which it does not declare: ${res.text}`);
  assert.deepEqual(schemas.problemsFor(response.content['application/json'].schema, res.body), [], res.text);
  if (res.status >= 400) {
    const keys = Object.keys(schemas.document.components.schemas.ErrorDetailsDto.properties);
    assert.deepEqual(Object.keys(res.body.error.details).filter((key) => !keys.includes(key)), [], `documented details: ${res.text}`);
  }
  return res;
}

const fork = async (sessionId: string, body: object = {}, idempotencyKey: string | null = newKey('fork')) =>
  conforms(await http(`${API}/sessions/${sessionId}/fork`, { method: 'POST', body, idempotencyKey }));

async function forked(sessionId: string, body: object = {}): Promise<any> {
  const res = await fork(sessionId, body);
  assert.equal(res.status, 201, res.text);
  return res.body;
}

/** A session whose turns each ran one of these messages to the end, in order; its turn ids. */
async function finished(...messages: string[]): Promise<{ id: string; turns: string[] }> {
  const session = await createSession(messages[0]);
  return { id: session.id, turns: await runTurns(session.id, messages, true) };
}

/** Runs each message as a turn of the session (the first already sent when `firstSent`), each to completion. */
async function runTurns(sessionId: string, messages: string[], firstSent = false): Promise<string[]> {
  const stream = await SseStream.open(sessionId);
  const turns: string[] = [];
  try {
    for (const [index, message] of messages.entries()) {
      if (index > 0 || !firstSent) assert.equal((await sendMessage(sessionId, message)).status, 202);
      const end = await stream.waitFor((e) => TERMINAL.includes(e.type) && !turns.includes(e.data.turn_id), 30_000);
      assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data));
      turns.push(end.data.turn_id as string);
    }
  } finally {
    stream.close();
  }
  return turns;
}

const lineageOf = (sessionId: string) =>
  query<{ depth: number; ancestor_id: string; upto_item_seq: string; upto_turn_seq: number }>(
    `SELECT depth, ancestor_id, upto_item_seq::text, upto_turn_seq FROM session_lineage WHERE session_id = $1 ORDER BY depth`,
    [sessionId],
  );
const lastItemSeq = async (turnId: string): Promise<string> => (await query<{ seq: string }>(`SELECT max(seq)::text AS seq FROM items WHERE turn_id = $1`, [turnId]))[0]!.seq;
const rowCounts = async (sessionId: string) =>
  (await query<{ items: number; turns: number }>(`SELECT (SELECT count(*)::int FROM items WHERE session_id = $1) AS items, (SELECT count(*)::int FROM turns WHERE session_id = $1) AS turns`, [sessionId]))[0]!;

describe('fork: the route', () => {
  let source: { id: string; turns: string[] };
  before(async () => {
    source = await finished('first message', 'second message');
  });

  it('forks after a turn: 201, a new root with yuxi.forked_from, the source\'s agent, model and project, its title and metadata; no history rows written', async () => {
    const src = (await http(`${API}/sessions/${source.id}`)).body;
    const [t1] = source.turns;
    const body = await forked(source.id, { after_turn_id: t1 });
    assert.notEqual(body.id, source.id);
    assert.deepEqual(body.yuxi.forked_from, { session_id: source.id, turn_id: t1, position: 'after' });
    assert.deepEqual(body.agent, src.agent);
    assert.equal(body.yuxi.project_id, src.yuxi.project_id);
    assert.equal(body.yuxi.title, src.yuxi.title);
    assert.deepEqual(body.metadata, src.metadata);
    assert.equal(body.yuxi.root_session_id, body.id, 'a root of its own tree');
    assert.equal(body.yuxi.depth, 0);
    assert.equal(body.yuxi.current_turn, null);
    assert.deepEqual((await http(`${API}/sessions/${body.id}`)).body.yuxi.forked_from, body.yuxi.forked_from, 'GET shows it too');
    assert.deepEqual(await rowCounts(body.id), { items: 0, turns: 0 }, 'nothing of the history is copied');
    assert.deepEqual(await lineageOf(body.id), [{ depth: 1, ancestor_id: source.id, upto_item_seq: await lastItemSeq(t1!), upto_turn_seq: 1 }]);

    const own = await forked(source.id, { after_turn_id: t1, title: 'Second try', metadata: { branch: 'b' } });
    assert.equal(own.yuxi.title, 'Second try');
    assert.deepEqual(own.metadata, { branch: 'b' });
    assert.deepEqual(own.yuxi.metadata, { branch: 'b' });
  });

  it('defaults to the last finished turn; before_turn_id inherits up to the start of that turn', async () => {
    const [t1, t2] = source.turns;
    const last = await forked(source.id);
    assert.deepEqual(last.yuxi.forked_from, { session_id: source.id, turn_id: t2, position: 'after' });
    assert.deepEqual(await lineageOf(last.id), [{ depth: 1, ancestor_id: source.id, upto_item_seq: await lastItemSeq(t2!), upto_turn_seq: 2 }]);

    const beforeSecond = await forked(source.id, { before_turn_id: t2 });
    assert.deepEqual(beforeSecond.yuxi.forked_from, { session_id: source.id, turn_id: t2, position: 'before' });
    assert.deepEqual(await lineageOf(beforeSecond.id), [{ depth: 1, ancestor_id: source.id, upto_item_seq: await lastItemSeq(t1!), upto_turn_seq: 1 }]);

    const beforeFirst = await forked(source.id, { before_turn_id: t1 });
    assert.deepEqual(beforeFirst.yuxi.forked_from, { session_id: source.id, turn_id: t1, position: 'before' });
    assert.deepEqual(await lineageOf(beforeFirst.id), [], 'nothing precedes the first turn');
  });

  it('is idempotent: the same key and body replay the first 201 byte for byte; another body is 409; no key is 422', async () => {
    const key = newKey('fork');
    const first = await fork(source.id, { title: 'Once' }, key);
    assert.equal(first.status, 201, first.text);
    const replay = await fork(source.id, { title: 'Once' }, key);
    assert.equal(replay.status, 201);
    assert.equal(replay.text, first.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    const other = await fork(source.id, { title: 'Twice' }, key);
    assert.equal(other.status, 409, other.text);
    assert.equal(other.body.error.code, 'idempotency_conflict');
    const forks = (await http(`${API}/sessions?forked_from=${source.id}&limit=100`)).body.data.filter((s: any) => s.yuxi.title === 'Once');
    assert.equal(forks.length, 1, 'one fork for the key');
    const keyless = await fork(source.id, {}, null);
    assert.equal(keyless.status, 422, keyless.text);
  });

  it('refuses both turn ids, unknown fields and bad ids with 422', async () => {
    const both = await fork(source.id, { after_turn_id: source.turns[0], before_turn_id: source.turns[1] });
    assert.equal(both.status, 422, both.text);
    assert.equal(both.body.error.code, 'validation_failed');
    for (const body of [{ after_turn_id: 'nope' }, { after_turn_id: null }, { model: 'x' }, { title: '' }]) {
      const res = await fork(source.id, body);
      assert.equal(res.status, 422, `${JSON.stringify(body)}: ${res.text}`);
    }
  });

  it('answers 404 for another owner\'s session, a deleted one, and a turn the source does not show', async () => {
    const stranger = await newProductUser('fork stranger');
    const foreign = await conforms(await call(stranger.caller, `${API}/sessions/${source.id}/fork`, { body: {}, idempotencyKey: newKey('fork') }));
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(foreign.body.error.code, 'not_found');

    const other = await finished('another session');
    for (const turnId of [other.turns[0], '00000000-0000-4000-8000-000000000000']) {
      for (const body of [{ after_turn_id: turnId }, { before_turn_id: turnId }]) {
        const res = await fork(source.id, body);
        assert.equal(res.status, 404, `${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.body.error.code, 'not_found');
      }
    }
    assert.equal((await http(`${API}/sessions/${other.id}`, { method: 'DELETE' })).status, 200);
    const deleted = await fork(other.id, {});
    assert.equal(deleted.status, 404, deleted.text);
    assert.equal((await fork('not-a-uuid', {})).status, 404);
  });

  it('answers 409 after a turn that has not finished, and with nothing finished yet; before it is fine', async () => {
    const empty = await createSession();
    const nothing = await fork(empty.id, {});
    assert.equal(nothing.status, 409, nothing.text);
    assert.equal(nothing.body.error.code, 'state_conflict');

    const asking = await createSession('[[ask:Go on?]]');
    const waiting = await until(async () => {
      const turn = (await http(`${API}/sessions/${asking.id}`)).body.yuxi.current_turn;
      return turn?.status === 'requires_action' ? (turn.id as string) : undefined;
    }, { attempts: 300, intervalMs: 100 });
    assert.ok(waiting, 'the turn waits for an answer');
    const turnId = waiting;
    const active = await fork(asking.id, { after_turn_id: turnId });
    assert.equal(active.status, 409, active.text);
    assert.equal(active.body.error.code, 'state_conflict');
    const none = await fork(asking.id, {});
    assert.equal(none.status, 409, 'its only turn has not finished');
    const editResend = await fork(asking.id, { before_turn_id: turnId });
    assert.equal(editResend.status, 201, editResend.text);
    assert.equal(editResend.body.yuxi.forked_from.position, 'before');
  });

  it('forks an archived source; the fork is not archived', async () => {
    const own = await finished('archive me');
    assert.equal((await http(`${API}/sessions/${own.id}/archive`, { method: 'POST' })).status, 200);
    const f = await forked(own.id);
    assert.equal(f.yuxi.archived, false);
  });

  it('forks a project session into the project (sharing its workdir, without an environment); a deleted project takes no fork (404)', async () => {
    const project = await http(`${API}/projects`, { body: { name: 'Forked project' } });
    assert.equal(project.status, 201, project.text);
    const created = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', project_id: project.body.id, input: 'in a project' } });
    assert.equal(created.status, 201, created.text);
    await runTurns(created.body.id, ['-'], true);
    const f = await forked(created.body.id);
    assert.equal(f.yuxi.project_id, project.body.id);
    assert.deepEqual(await query(`SELECT workdir_id FROM sessions WHERE id = $1`, [f.id]), [{ workdir_id: project.body.id }]);
    assert.equal((await http(`${API}/projects/${project.body.id}`, { method: 'DELETE' })).status, 200);
    const refused = await fork(created.body.id);
    assert.equal(refused.status, 404, refused.text);
    assert.equal(refused.body.error.code, 'not_found');
  });

  it('refuses a member of a cooperation tree with 409 naming the root', async () => {
    const coordinator = await createSessionWith('coordinator', '[[tool:create_subagent {"task":"alpha","name":"a"}]] [[tool:wait_subagents {}]]');
    await runTurns(coordinator.id, ['-'], true);
    const tree = (await http(`${API}/sessions?root_session_id=${coordinator.id}&limit=100`)).body.data;
    const member = tree.find((s: any) => s.id !== coordinator.id);
    assert.ok(member, 'the member exists');
    const res = await fork(member.id, {});
    assert.equal(res.status, 409, res.text);
    assert.equal(res.body.error.code, 'state_conflict');
    assert.equal(res.body.error.details.root_session_id, coordinator.id);
  });

  it('lists exactly the forks of a session with forked_from; they are roots, so the default list shows them', async () => {
    const own = await finished('a session to fork twice');
    const a = await forked(own.id);
    const b = await forked(own.id, { before_turn_id: own.turns[0] });
    await forked(a.id);
    const listed = await http(`${API}/sessions?forked_from=${own.id}&order=asc&limit=100`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.data.map((s: any) => s.id), [a.id, b.id]);
    const all = (await http(`${API}/sessions?limit=100`)).body.data.map((s: any) => s.id);
    assert.ok(all.includes(a.id) && all.includes(b.id));
    assert.equal((await http(`${API}/sessions?forked_from=nope`)).status, 422);
  });
});

describe('fork: the new session', () => {
  let receiver: WebhookReceiver;
  before(async () => {
    receiver = await WebhookReceiver.start();
  });
  after(() => receiver.close());

  it('announces agent.session.created of the fork on its own stream and by webhook', async () => {
    const owner: Caller = (await newProductUser('fork hooks')).caller;
    const hook = await call(owner, `${API}/webhooks`, { body: { url: `${receiver.url}/fork`, event_types: ['agent.session.created'] } });
    assert.equal(hook.status, 201, hook.text);
    const src = await createSessionAs(owner, 'hello fork hooks');
    await receiver.waitFor('the source announced', () => receiver.at('/fork').some((h) => h.json?.data?.session_id === src.id));
    await until(async () => ((await call(owner, `${API}/sessions/${src.id}`)).body.status === 'completed' ? true : undefined), { attempts: 300, intervalMs: 100 });
    const created = await call(owner, `${API}/sessions/${src.id}/fork`, { body: {}, idempotencyKey: newKey('fork') });
    assert.equal(created.status, 201, created.text);
    await receiver.waitFor('the fork announced', () => receiver.at('/fork').some((h) => h.json?.data?.session_id === created.body.id));

    const stream = await SseStream.open(created.body.id, { key: owner.token });
    try {
      const first = await stream.waitFor(() => true);
      assert.equal(first.type, 'agent.session.created');
      assert.equal(first.data.session.id, created.body.id);
      assert.deepEqual(first.data.session.yuxi.forked_from, created.body.yuxi.forked_from);
    } finally {
      stream.close();
    }
  });

  it('runs its own turns after the inherited ones; deleting the source keeps it readable and runnable', async () => {
    const src = await finished('one', 'two');
    const f = await forked(src.id, { after_turn_id: src.turns[0] });
    await runTurns(f.id, ['on the fork']);
    const [ownTurn] = await query<{ seq: number; min_item: string }>(
      `SELECT t.seq, (SELECT min(seq)::text FROM items WHERE turn_id = t.id) AS min_item FROM turns t WHERE t.session_id = $1`,
      [f.id],
    );
    assert.equal(ownTurn!.seq, 2, 'its first own turn follows the inherited turn 1');
    assert.ok(BigInt(ownTurn!.min_item) > BigInt(await lastItemSeq(src.turns[0]!)), 'its own items sort after the inherited ones');

    assert.equal((await http(`${API}/sessions/${src.id}`, { method: 'DELETE' })).status, 200);
    const read = await http(`${API}/sessions/${f.id}`);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.yuxi.forked_from.session_id, src.id);
    await runTurns(f.id, ['after the source is gone']);
  });

  it('keeps the source\'s files while a live fork inherits them; deleting the last fork releases them', async () => {
    const draft = await uploadDraft('notes the fork inherits\n', 'notes.txt');
    const created = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', input: 'Read the notes', yuxi: { attachment_file_ids: [draft.id] } } });
    assert.equal(created.status, 201, created.text);
    await runTurns(created.body.id, ['-'], true);
    const f = await forked(created.body.id);
    const status = async (): Promise<string | undefined> => (await query<{ status: string }>(`SELECT status FROM files WHERE id = $1`, [draft.id]))[0]?.status;
    const kept = await status();
    assert.ok(kept !== undefined && kept !== 'deleting', `the attachment is live (${kept})`);
    assert.equal((await http(`${API}/sessions/${created.body.id}`, { method: 'DELETE' })).status, 200);
    assert.equal(await status(), kept, 'the fork still inherits the attachment: not tombstoned');
    assert.equal((await http(`${API}/sessions/${f.id}`, { method: 'DELETE' })).status, 200);
    const gone = await status();
    assert.ok(gone === undefined || gone === 'deleting', `released with the last fork (${gone})`);
  });

  it('forks a fork: its own turn deepens the lineage, an inherited turn does not', async () => {
    const src = await finished('s one', 's two');
    const f1 = await forked(src.id);
    const [f1Turn] = await runTurns(f1.id, ['f1 own']);
    const f2 = await forked(f1.id, { after_turn_id: f1Turn });
    assert.deepEqual(await lineageOf(f2.id), [
      { depth: 1, ancestor_id: f1.id, upto_item_seq: await lastItemSeq(f1Turn!), upto_turn_seq: 3 },
      { depth: 2, ancestor_id: src.id, upto_item_seq: await lastItemSeq(src.turns[1]!), upto_turn_seq: 2 },
    ]);
    const f3 = await forked(f1.id, { after_turn_id: src.turns[0] });
    assert.deepEqual(f3.yuxi.forked_from, { session_id: f1.id, turn_id: src.turns[0], position: 'after' });
    assert.deepEqual(await lineageOf(f3.id), [{ depth: 1, ancestor_id: src.id, upto_item_seq: await lastItemSeq(src.turns[0]!), upto_turn_seq: 1 }]);
    const f4 = await forked(f1.id, { before_turn_id: f1Turn });
    assert.deepEqual(await lineageOf(f4.id), [{ depth: 1, ancestor_id: src.id, upto_item_seq: await lastItemSeq(src.turns[1]!), upto_turn_seq: 2 }], 'nothing of f1 before its own turn');
    // A fork with no turn of its own forks, by default, at the last finished turn it inherited.
    const f5 = await forked(f4.id);
    assert.deepEqual(f5.yuxi.forked_from, { session_id: f4.id, turn_id: src.turns[1], position: 'after' });
    assert.deepEqual(await lineageOf(f5.id), await lineageOf(f4.id));
  });
});

/** An api replica sharing the suite's database with FORK_MAX_DEPTH=1 (forks need no worker); waits, bounded, for /health. */
async function replicaWithDepth(depth: number): Promise<{ url: string; child: ChildProcess }> {
  const { SCRIPTS } = await loadFromRoot<StackModule>('scripts/lib/stack.mjs');
  const { freePort } = await loadFromRoot<{ freePort(): Promise<number> }>('scripts/lib/infra.mjs');
  const port = await freePort();
  const child = spawn(process.execPath, [SCRIPTS.api], { env: { ...process.env, PORT: String(port), FORK_MAX_DEPTH: String(depth) }, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  for (let poll = 0; poll < 300 && child.exitCode === null; poll += 1) {
    if (await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) }).then((res) => res.ok, () => false)) return { url, child };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill('SIGTERM');
  throw new Error('the replica did not start');
}

describe('fork: the depth limit', () => {
  let replica: { url: string; child: ChildProcess } | undefined;
  after(() => replica?.child.kill('SIGTERM'));

  it('refuses a fork whose lineage would be deeper than FORK_MAX_DEPTH (409 fork_depth_exceeded, details.limit); an inherited turn stays within it', async () => {
    replica = await replicaWithDepth(1);
    const src = await finished('depth one');
    const f1 = await forked(src.id);
    const [own] = await runTurns(f1.id, ['depth two']);
    const forkThere = async (body: object) => conforms(await call(bootstrap, `${API}/sessions/${f1.id}/fork`, { body, idempotencyKey: newKey('fork'), baseUrl: replica!.url }));
    const deep = await forkThere({ after_turn_id: own });
    assert.equal(deep.status, 409, deep.text);
    assert.equal(deep.body.error.code, 'fork_depth_exceeded');
    assert.deepEqual(deep.body.error.details, { limit: 1 });
    const inherited = await forkThere({ after_turn_id: src.turns[0] });
    assert.equal(inherited.status, 201, inherited.text);
    assert.deepEqual(await lineageOf(inherited.body.id), [{ depth: 1, ancestor_id: src.id, upto_item_seq: await lastItemSeq(src.turns[0]!), upto_turn_seq: 1 }]);
  });
});
