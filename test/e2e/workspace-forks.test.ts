import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type WorkspaceHead, WorkspaceForks } from '#libs/environments';
import { query } from '../support/db.js';
import { sendMessage } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { harnessCall, realSession, type StoreRig, storeRig } from '../support/workspaces.js';

// Forks' workspaces on real rows (the suite's Postgres, a local file storage shared by two rigs
// standing for two workers, real turns run by the stack): the workdir's version as of a turn's end
// or start whoever wrote it, a branch that starts a workspace at another workdir's version without
// copying anything, and commits and calls on it.
const BOUNDS = { maxFiles: 100, maxBytes: 10 * 1024 * 1024 };
type Session = { id: string; ownerId: string; workdirId: string };
const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);

describe('workspace forks', () => {
  let worker1: StoreRig;
  let worker2: StoreRig;
  const forks = new WorkspaceForks();
  before(async () => {
    const blobs = await mkdtemp(path.join(tmpdir(), 'yx-blobs-'));
    worker1 = await storeRig(blobs);
    worker2 = await storeRig(blobs);
  });
  const streams = new Map<string, SseStream>();
  after(async () => {
    streams.forEach((stream) => stream.close());
    await worker1.dataSource.destroy();
    await worker2.dataSource.destroy();
  });

  type Position = 'after' | 'before';
  const asOf = (session: Session, turnId: string, position: Position = 'after') => forks.versionAsOf(worker1.dataSource.manager, { workdirId: session.workdirId, turnId, position });
  const branch = (fork: Session, baseVersionId: string) => forks.branch(worker1.dataSource.manager, { workdirId: fork.workdirId, ownerId: fork.ownerId, baseVersionId });

  /** Runs one turn of `session` (a message, the scripted model's answer) to its end; its id. */
  async function turn(session: Session): Promise<string> {
    let stream = streams.get(session.id);
    if (!stream) streams.set(session.id, (stream = await SseStream.open(session.id)));
    const seen = stream.events.length;
    const res = await sendMessage(session.id, 'hello');
    assert.equal(res.status, 202, res.text);
    const end = await stream.waitFor((e) => TERMINAL.has(e.type) && stream.events.indexOf(e) >= seen, 60_000);
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));
    return end.data.turn_id;
  }

  /** Writes `files` in `session`'s checkout at its workdir's head, committed outside any turn (the first commit of a workdir is its setup). */
  async function write(session: Session, files: Record<string, string>, workdirId = session.workdirId): Promise<WorkspaceHead> {
    const state = await worker1.repository.state(workdirId);
    if (!state) assert.equal(await worker1.repository.claimSetup(workdirId, session.ownerId, 600), true);
    const open = await worker1.store.open(session.id, workdirId, state?.head ?? null, BOUNDS);
    for (const [file, content] of Object.entries(files)) await writeFile(path.join(open.checkout.dir, file), content);
    const committed = await worker1.store.commit(open, { sessionId: session.id, turnId: null, callId: null }, BOUNDS, state ? {} : { setupOutput: '' });
    return committed.kind === 'committed' ? committed.version : assert.fail(`not committed: ${committed.kind}`);
  }

  it('the version as of a turn is the workdir\'s latest committed before the turn ended (after) or started (before), whoever wrote it; none before the first', async () => {
    const source = await realSession();
    const t1 = await turn(source);
    const v1 = await write(source, { 'a.txt': 'a' });
    const t2 = await turn(source);
    // Another session writing in the same workdir (a member of its tree, a session of its project), then the source.
    const member = await realSession();
    const v2 = await write(source, { 'b.txt': 'b' });
    const v3 = await write(member, { 'm.txt': 'm' }, source.workdirId);
    const t3 = await turn(source);
    const late = await write(member, { 'late.txt': 'after the turn ended' }, source.workdirId);
    assert.deepEqual([v1.seq, v2.seq, v3.seq, late.seq], [1, 2, 3, 4]);
    assert.equal(await asOf(source, t1, 'before'), null, 'no workspace yet at that point: the fork sets up its own');
    assert.equal(await asOf(source, t1, 'after'), null);
    assert.equal(await asOf(source, t2, 'before'), v1.versionId);
    assert.equal(await asOf(source, t2, 'after'), v1.versionId);
    assert.equal(await asOf(source, t3, 'before'), v3.versionId, 'the other session\'s write counts: the workdir is shared');
    assert.equal(await asOf(source, t3, 'after'), v3.versionId, 'a write after the turn ended does not');
    // A version's time is taken once the workspace is locked: by time is by seq (what the latest before a time relies on).
    const byTime = await query<{ seq: number }>('SELECT seq FROM workspace_versions WHERE workdir_id = $1 ORDER BY created_at, seq', [source.workdirId]);
    assert.deepEqual(byTime.map((r) => r.seq), [1, 2, 3, 4]);
  });

  it('a branch starts at the base (setup done, nothing copied); its commits go on from the base\'s seq with the other workdir\'s version as parent; neither side sees the other\'s writes', async () => {
    const source = await realSession();
    await write(source, { 'a.txt': 'a' });
    const base = await write(source, { 'b.txt': 'b' });
    const fork = await realSession();
    const versionsBefore = await query<{ n: number }>('SELECT count(*)::int AS n FROM workspace_versions');
    const puts = worker1.storage.puts + worker2.storage.puts;
    await branch(fork, base.versionId);
    const [row] = await query<{ head_version_id: string; base_version_id: string; setup_state: string; placed_file_ids: string[]; owner_id: string }>(
      'SELECT head_version_id, base_version_id, setup_state, placed_file_ids, owner_id FROM workspaces WHERE workdir_id = $1',
      [fork.workdirId],
    );
    assert.deepEqual(row, { head_version_id: base.versionId, base_version_id: base.versionId, setup_state: 'done', placed_file_ids: [], owner_id: fork.ownerId });
    assert.deepEqual(await query<{ n: number }>('SELECT count(*)::int AS n FROM workspace_versions'), versionsBefore, 'no version made');
    assert.equal(worker1.storage.puts + worker2.storage.puts, puts, 'no blob stored');

    // A fork that has not written: its version as of any of its turns is its base (what a fork of it starts at).
    const quiet = await turn(fork);
    assert.equal(await asOf(fork, quiet, 'before'), base.versionId);
    assert.equal(await asOf(fork, quiet, 'after'), base.versionId);

    const own = await write(fork, { 'a.txt': 'the fork\'s a' });
    const wrote = await turn(fork);
    const [version] = await query<{ workdir_id: string; seq: number; parent_id: string; session_id: string }>(
      'SELECT workdir_id, seq, parent_id, session_id FROM workspace_versions WHERE id = $1',
      [own.versionId],
    );
    assert.deepEqual(version, { workdir_id: fork.workdirId, seq: base.seq + 1, parent_id: base.versionId, session_id: fork.id });
    assert.deepEqual(Object.keys(own.manifest).sort(), ['a.txt', 'b.txt']);
    assert.equal(await asOf(fork, quiet, 'after'), base.versionId, 'before its first write: the base');
    assert.equal(await asOf(fork, wrote, 'after'), own.versionId);

    // The source goes on: its head moves, the fork's does not, and the reverse.
    const later = await write(source, { 'c.txt': 'c' });
    assert.equal((await worker1.repository.state(fork.workdirId))!.head!.versionId, own.versionId);
    assert.equal(later.seq, base.seq + 1, 'the source\'s own seq goes on in its workdir');
    assert.deepEqual(Object.keys(later.manifest).sort(), ['a.txt', 'b.txt', 'c.txt']);
    assert.equal(later.manifest['a.txt']![1], 1, 'the source keeps its a.txt');

    // A fork of the fork branches from the fork's version, itself parented across workdirs.
    const grandchild = await realSession();
    await branch(grandchild, (await asOf(fork, wrote, 'after'))!);
    const next = await write(grandchild, { 'g.txt': 'g' });
    assert.equal(next.seq, own.seq + 1);
    assert.deepEqual(Object.keys(next.manifest).sort(), ['a.txt', 'b.txt', 'g.txt']);
  });

  it('a call on a branched workspace opens the fork\'s checkout at the base on another worker (blobs downloaded), never runs the setup again, and commits its writes as the fork\'s', async () => {
    const source = await realSession();
    await write(source, { 'a.txt': 'alpha\n' });
    const base = await write(source, { 'b.txt': 'beta\n' });
    const point = await turn(source);
    await write(source, { 'late.txt': 'after the point\n' });
    const fork = await realSession();
    await branch(fork, (await asOf(source, point, 'after'))!);
    assert.equal(await asOf(source, point, 'after'), base.versionId);
    // The environment asks for a setup command: the rig has no runner, so running it would fail the call.
    const environment = { setup_commands: ['echo setup again > setup.txt'] };
    const environments = worker2.environments();
    const listed = await environments.execute(harnessCall(fork, 'list_files', {}, environment));
    assert.equal(listed.success, true, listed.output);
    assert.doesNotMatch(listed.output, /workspace set up/);
    assert.match(listed.output, /^"a\.txt" \(6 bytes\)$/m);
    assert.match(listed.output, /^"b\.txt" \(5 bytes\)$/m);
    assert.doesNotMatch(listed.output, /late\.txt|setup\.txt/);
    const read = await environments.execute(harnessCall(fork, 'read_file', { path: 'b.txt' }, environment));
    assert.equal(read.output, 'beta\n');

    const wrote = await environments.execute(harnessCall(fork, 'write_file', { path: 'mine.txt', content: 'the fork\'s\n' }, environment));
    assert.equal(wrote.success, true, wrote.output);
    const [version] = await query<{ workdir_id: string; seq: number; parent_id: string }>('SELECT workdir_id, seq, parent_id FROM workspace_versions WHERE id = $1', [wrote.workspaceVersionId]);
    assert.deepEqual(version, { workdir_id: fork.workdirId, seq: base.seq + 1, parent_id: base.versionId });
    const artifacts = await query<{ path: string; workdir_id: string }>('SELECT path, workdir_id FROM session_artifacts WHERE session_id = $1', [fork.id]);
    assert.deepEqual(artifacts, [{ path: '/workspace/mine.txt', workdir_id: fork.workdirId }], 'the fork\'s artifacts are its own writes');
    const sources = await worker1.environments().execute(harnessCall(source, 'list_files', {}));
    assert.doesNotMatch(sources.output, /mine\.txt/);
  });
});
