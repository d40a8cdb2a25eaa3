import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type WorkspaceHead, WorkspaceForks } from '#libs/environments';
import { query } from '../support/db.js';
import { harnessCall, realSession, type StoreRig, storeRig } from '../support/workspaces.js';

// Forks' workspaces on real rows (the suite's Postgres, a local file storage shared by two rigs
// standing for two workers): the version as of a turn of its author session, a branch that starts
// a workspace at another workdir's version without copying anything, and commits and calls on it.
const BOUNDS = { maxFiles: 100, maxBytes: 10 * 1024 * 1024 };
type Session = { id: string; ownerId: string; workdirId: string };

describe('workspace forks', () => {
  let worker1: StoreRig;
  let worker2: StoreRig;
  const forks = new WorkspaceForks();
  before(async () => {
    const blobs = await mkdtemp(path.join(tmpdir(), 'yx-blobs-'));
    worker1 = await storeRig(blobs);
    worker2 = await storeRig(blobs);
  });
  after(async () => {
    await worker1.dataSource.destroy();
    await worker2.dataSource.destroy();
  });

  const asOf = (session: Session, turnSeq: number) => forks.versionAsOf(worker1.dataSource.manager, { sessionId: session.id, workdirId: session.workdirId, turnSeq });
  const branch = (fork: Session, baseVersionId: string) => forks.branch(worker1.dataSource.manager, { workdirId: fork.workdirId, ownerId: fork.ownerId, baseVersionId });

  /** Writes `files` in `session`'s checkout at its workdir's head, committed as its turn `turnSeq` (the first commit of a workdir is its setup). */
  async function write(session: Session, turnSeq: number, files: Record<string, string>, workdirId = session.workdirId): Promise<WorkspaceHead> {
    const state = await worker1.repository.state(workdirId);
    if (!state) assert.equal(await worker1.repository.claimSetup(workdirId, session.ownerId, 600), true);
    const open = await worker1.store.open(session.id, workdirId, state?.head ?? null, BOUNDS);
    for (const [file, content] of Object.entries(files)) await writeFile(path.join(open.checkout.dir, file), content);
    const committed = await worker1.store.commit(open, { sessionId: session.id, turnId: null, turnSeq, callId: null }, BOUNDS, state ? {} : { setupOutput: '' });
    return committed.kind === 'committed' ? committed.version : assert.fail(`not committed: ${committed.kind}`);
  }

  it('the version as of a turn is the one after the session\'s last write at or before it; none before its first; another session\'s writes in the workdir do not count', async () => {
    const source = await realSession();
    const v1 = await write(source, 1, { 'a.txt': 'a' });
    const v2 = await write(source, 3, { 'b.txt': 'b' });
    const v3 = await write(source, 3, { 'b.txt': 'b again' });
    // A member of its tree writing in the same workdir at its own turn 4.
    const member = await realSession();
    await write(member, 4, { 'm.txt': 'm' }, source.workdirId);
    const v4 = await write(source, 6, { 'c.txt': 'c' });
    assert.deepEqual([v1.seq, v2.seq, v3.seq, v4.seq], [1, 2, 3, 5]);
    assert.equal(await asOf(source, 0), null, 'no workspace yet at that point: the fork sets up its own');
    assert.equal(await asOf(source, 1), v1.versionId);
    assert.equal(await asOf(source, 2), v1.versionId);
    assert.equal(await asOf(source, 3), v3.versionId, 'the turn\'s last write');
    assert.equal(await asOf(source, 4), v3.versionId, 'the member\'s write is not the source\'s');
    assert.equal(await asOf(source, 5), v3.versionId);
    assert.equal(await asOf(source, 99), v4.versionId);
    const recorded = await query<{ seq: number; turn_seq: number }>('SELECT seq, turn_seq FROM workspace_versions WHERE workdir_id = $1 ORDER BY seq', [source.workdirId]);
    assert.deepEqual(recorded.map((r) => [r.seq, r.turn_seq]), [[1, 1], [2, 3], [3, 3], [4, 4], [5, 6]]);
  });

  it('a branch starts at the base (setup done, nothing copied); its commits go on from the base\'s seq with the other workdir\'s version as parent; neither side sees the other\'s writes', async () => {
    const source = await realSession();
    await write(source, 1, { 'a.txt': 'a' });
    const base = await write(source, 2, { 'b.txt': 'b' });
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
    assert.equal(await asOf(fork, 5), base.versionId);

    const own = await write(fork, 3, { 'a.txt': 'the fork\'s a' });
    const [version] = await query<{ workdir_id: string; seq: number; parent_id: string; session_id: string; turn_seq: number }>(
      'SELECT workdir_id, seq, parent_id, session_id, turn_seq FROM workspace_versions WHERE id = $1',
      [own.versionId],
    );
    assert.deepEqual(version, { workdir_id: fork.workdirId, seq: base.seq + 1, parent_id: base.versionId, session_id: fork.id, turn_seq: 3 });
    assert.deepEqual(Object.keys(own.manifest).sort(), ['a.txt', 'b.txt']);
    assert.equal(await asOf(fork, 2), base.versionId, 'before its first write: the base');
    assert.equal(await asOf(fork, 3), own.versionId);

    // The source goes on: its head moves, the fork's does not, and the reverse.
    const later = await write(source, 3, { 'c.txt': 'c' });
    assert.equal((await worker1.repository.state(fork.workdirId))!.head!.versionId, own.versionId);
    assert.equal(later.seq, base.seq + 1, 'the source\'s own seq goes on in its workdir');
    assert.deepEqual(Object.keys(later.manifest).sort(), ['a.txt', 'b.txt', 'c.txt']);
    assert.equal(later.manifest['a.txt']![1], 1, 'the source keeps its a.txt');

    // A fork of the fork branches from the fork's version, itself parented across workdirs.
    const grandchild = await realSession();
    await branch(grandchild, (await asOf(fork, 3))!);
    const next = await write(grandchild, 4, { 'g.txt': 'g' });
    assert.equal(next.seq, own.seq + 1);
    assert.deepEqual(Object.keys(next.manifest).sort(), ['a.txt', 'b.txt', 'g.txt']);
  });

  it('a call on a branched workspace opens the fork\'s checkout at the base on another worker (blobs downloaded), never runs the setup again, and commits its writes as the fork\'s', async () => {
    const source = await realSession();
    await write(source, 1, { 'a.txt': 'alpha\n' });
    const base = await write(source, 2, { 'b.txt': 'beta\n' });
    await write(source, 3, { 'late.txt': 'after the point\n' });
    const fork = await realSession();
    await branch(fork, (await asOf(source, 2))!);
    assert.equal((await asOf(source, 2)), base.versionId);
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
