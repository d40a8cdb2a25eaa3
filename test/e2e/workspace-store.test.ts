import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FileTools } from '#libs/environments';
import { query } from '../support/db.js';
import { harnessCall, realSession, type StoreRig, storeRig } from '../support/workspaces.js';

// The environment's workspace store on the suite's Postgres and a local file storage: versions of
// content-addressed blobs, sessions' checkouts, per-path merges of concurrent commits, bounds and
// symlinks. Two rigs share one storage, as two workers do.
const BOUNDS = { maxFiles: 100, maxBytes: 10 * 1024 * 1024 };
const author = (sessionId: string) => ({ sessionId, turnId: null, callId: null });
const owner = { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };

describe('workspace store', () => {
  let worker1: StoreRig;
  let worker2: StoreRig;
  before(async () => {
    const blobs = await mkdtemp(path.join(tmpdir(), 'yx-blobs-'));
    worker1 = await storeRig(blobs);
    worker2 = await storeRig(blobs);
  });
  after(async () => {
    await worker1.dataSource.destroy();
    await worker2.dataSource.destroy();
  });

  async function newWorkspace() {
    const session = await realSession();
    assert.equal(await worker1.repository.claimSetup(session.workdirId, session.ownerId, 600), true);
    const first = await worker1.store.open(session.id, session.workdirId, null, BOUNDS);
    await writeFile(path.join(first.checkout.dir, 'README.md'), '# hello\n');
    const committed = await worker1.store.commit(first, author(session.id), BOUNDS, { setupOutput: '' });
    assert.equal(committed.kind, 'committed');
    return session;
  }

  it('a commit is a version another worker checks out byte for byte, uploading only changed files', async () => {
    const session = await newWorkspace();
    const head1 = (await worker1.repository.state(session.workdirId))!.head!;
    const open = await worker1.store.open(session.id, session.workdirId, head1, BOUNDS);
    await mkdir(path.join(open.checkout.dir, 'src'));
    await writeFile(path.join(open.checkout.dir, 'src/a.txt'), 'alpha');
    await writeFile(path.join(open.checkout.dir, 'src/b.txt'), 'beta');
    await writeFile(path.join(open.checkout.dir, 'run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
    const puts = worker1.storage.puts;
    const v2 = await worker1.store.commit(open, author(session.id), BOUNDS);
    assert.equal(v2.kind, 'committed');
    assert.equal(worker1.storage.puts - puts, 3, 'three new contents, three uploads');

    // One file changed, one added with content already stored: one upload.
    const head2 = (await worker1.repository.state(session.workdirId))!.head!;
    const again = await worker1.store.open(session.id, session.workdirId, head2, BOUNDS);
    await writeFile(path.join(again.checkout.dir, 'src/a.txt'), 'alpha 2');
    await writeFile(path.join(again.checkout.dir, 'copy.txt'), 'beta');
    const before3 = worker1.storage.puts;
    const v3 = await worker1.store.commit(again, author(session.id), BOUNDS);
    assert.equal(v3.kind === 'committed' && v3.version.seq, 3);
    assert.equal(worker1.storage.puts - before3, 1);

    // Another worker's checkout of another session of the workdir: the same files and modes.
    const member = await realSession();
    const head3 = (await worker2.repository.state(session.workdirId))!.head!;
    const theirs = await worker2.store.open(member.id, session.workdirId, head3, BOUNDS);
    assert.equal(await readFile(path.join(theirs.checkout.dir, 'src/a.txt'), 'utf8'), 'alpha 2');
    assert.equal(await readFile(path.join(theirs.checkout.dir, 'copy.txt'), 'utf8'), 'beta');
    assert.equal((await lstat(path.join(theirs.checkout.dir, 'run.sh'))).mode & 0o111, 0o111);
    // An older version is still whole: a fork points at it.
    const v2Manifest = (await worker2.repository.version(v2.kind === 'committed' ? v2.version.versionId : ''))!.manifest;
    assert.deepEqual(Object.keys(v2Manifest).sort(), ['README.md', 'run.sh', 'src/a.txt', 'src/b.txt']);
  });

  it('concurrent commits of two sessions merge per path: different paths both survive, the same path is the later commit\'s', async () => {
    const session = await newWorkspace();
    const member = await realSession();
    const head = (await worker1.repository.state(session.workdirId))!.head!;
    const mine = await worker1.store.open(session.id, session.workdirId, head, BOUNDS);
    const theirs = await worker2.store.open(member.id, session.workdirId, head, BOUNDS);
    await writeFile(path.join(mine.checkout.dir, 'mine.txt'), 'from the root');
    await writeFile(path.join(theirs.checkout.dir, 'theirs.txt'), 'from the member');
    await writeFile(path.join(mine.checkout.dir, 'shared.txt'), 'root wrote first');
    await writeFile(path.join(theirs.checkout.dir, 'shared.txt'), 'member wrote last');
    await worker1.store.commit(mine, author(session.id), BOUNDS);
    await worker2.store.commit(theirs, author(member.id), BOUNDS);
    const merged = (await worker1.repository.state(session.workdirId))!.head!;
    const check = await worker1.store.open(session.id, session.workdirId, merged, BOUNDS);
    assert.equal(await readFile(path.join(check.checkout.dir, 'mine.txt'), 'utf8'), 'from the root');
    assert.equal(await readFile(path.join(check.checkout.dir, 'theirs.txt'), 'utf8'), 'from the member');
    assert.equal(await readFile(path.join(check.checkout.dir, 'shared.txt'), 'utf8'), 'member wrote last');
    assert.equal(await readFile(path.join(check.checkout.dir, 'README.md'), 'utf8'), '# hello\n');
  });

  it('commits racing on two workers serialise on the workspace: every session\'s file survives, one version each', async () => {
    const session = await newWorkspace();
    const head = (await worker1.repository.state(session.workdirId))!.head!;
    const members = await Promise.all([1, 2, 3, 4].map(() => realSession()));
    const opened = await Promise.all(members.map((member, index) => (index % 2 ? worker2 : worker1).store.open(member.id, session.workdirId, head, BOUNDS)));
    await Promise.all(opened.map((open, index) => writeFile(path.join(open.checkout.dir, `member-${index}.txt`), `member ${index}`)));
    const results = await Promise.all(opened.map((open, index) => (index % 2 ? worker2 : worker1).store.commit(open, author(members[index]!.id), BOUNDS)));
    const seqs = results.map((result) => (result.kind === 'committed' ? result.version.seq : 0)).sort();
    assert.deepEqual(seqs, [head.seq + 1, head.seq + 2, head.seq + 3, head.seq + 4]);
    const final = (await worker1.repository.state(session.workdirId))!.head!;
    assert.deepEqual(Object.keys(final.manifest).sort(), ['README.md', 'member-0.txt', 'member-1.txt', 'member-2.txt', 'member-3.txt']);
  });

  it('a call past the file bound commits nothing and puts the checkout back to the head', async () => {
    const session = await newWorkspace();
    const head = (await worker1.repository.state(session.workdirId))!.head!;
    const open = await worker1.store.open(session.id, session.workdirId, head, BOUNDS);
    for (let i = 0; i < 4; i++) await writeFile(path.join(open.checkout.dir, `f${i}.txt`), `${i}`);
    const result = await worker1.store.commit(open, author(session.id), { maxFiles: 3, maxBytes: BOUNDS.maxBytes });
    assert.deepEqual(result, { kind: 'refused', reason: 'the workspace would hold more than 3 files' });
    assert.equal((await worker1.repository.state(session.workdirId))!.head!.versionId, head.versionId);
    await assert.rejects(lstat(path.join(open.checkout.dir, 'f0.txt')), { code: 'ENOENT' });
    const big = await worker1.store.commit(
      await (async () => {
        const again = await worker1.store.open(session.id, session.workdirId, head, BOUNDS);
        await writeFile(path.join(again.checkout.dir, 'big.bin'), Buffer.alloc(2048));
        return again;
      })(),
      author(session.id),
      { maxFiles: 100, maxBytes: 1024 },
    );
    assert.equal(big.kind, 'refused');
  });

  it('symlinks are versioned as symlinks, never followed: tools refuse paths through them', async () => {
    const session = await newWorkspace();
    const head = (await worker1.repository.state(session.workdirId))!.head!;
    const open = await worker1.store.open(session.id, session.workdirId, head, BOUNDS);
    await symlink('/etc', path.join(open.checkout.dir, 'etc'));
    await symlink('/etc/hostname', path.join(open.checkout.dir, 'host'));
    const tools = new FileTools(open.checkout.dir, owner);
    const read = await tools.readFile({ path: 'host' });
    assert.equal(read.success, false);
    assert.match(read.output, /symlink/);
    assert.equal((await tools.readFile({ path: 'etc/passwd' })).success, false);
    const write = await tools.writeFile({ path: 'etc/planted', content: 'x' });
    assert.equal(write.success, false);
    await assert.rejects(lstat('/etc/planted'), { code: 'ENOENT' });
    assert.equal((await tools.writeFile({ path: 'host', content: 'x' })).success, false);
    assert.equal((await tools.listFiles({ path: 'etc' })).success, false);
    assert.match((await tools.listFiles({})).output, /^"host" -> "\/etc\/hostname"$/m);
    const patch = await tools.applyPatch({ patch: '--- a/host\n+++ b/host\n@@ -1 +1 @@\n-x\n+y\n' });
    assert.equal(patch.success, false);

    const committed = await worker1.store.commit(open, author(session.id), BOUNDS);
    assert.equal(committed.kind, 'committed');
    const member = await realSession();
    const theirs = await worker2.store.open(member.id, session.workdirId, committed.kind === 'committed' ? committed.version : null, BOUNDS);
    assert.equal(await readlink(path.join(theirs.checkout.dir, 'host')), '/etc/hostname');
    assert.ok((await lstat(path.join(theirs.checkout.dir, 'etc'))).isSymbolicLink());
  });

  it('SessionEnvironments: write_file, read_file and list_files by path; writes are versions and artifacts; escapes are tool errors', async () => {
    const session = await realSession();
    const environments = worker1.environments();
    const wrote = await environments.execute(harnessCall(session, 'write_file', { path: 'out/report.md', content: '# Report\n' }));
    assert.equal(wrote.success, true, wrote.output);
    assert.ok(wrote.workspaceVersionId);
    const read = await worker2.environments().execute(harnessCall(session, 'read_file', { path: '/workspace/out/report.md' }));
    assert.deepEqual({ success: read.success, output: read.output }, { success: true, output: '# Report\n' });
    const listed = await environments.execute(harnessCall(session, 'list_files', {}));
    assert.match(listed.output, /^"out\/report\.md" \(9 bytes\)$/m);
    assert.equal(listed.workspaceVersionId, undefined);
    for (const bad of ['../x', '/etc/passwd']) {
      const refused = await environments.execute(harnessCall(session, 'write_file', { path: bad, content: 'x' }));
      assert.equal(refused.success, false, bad);
    }
    const patched = await environments.execute(harnessCall(session, 'apply_patch', { patch: '--- a/out/report.md\n+++ b/out/report.md\n@@ -1 +1,2 @@\n # Report\n+Done.\n' }));
    assert.equal(patched.success, true, patched.output);
    const artifacts = await query<{ path: string; size_bytes: string; workdir_id: string }>('SELECT path, size_bytes, workdir_id FROM session_artifacts WHERE session_id = $1 ORDER BY id', [session.id]);
    assert.deepEqual(artifacts.map((a) => [a.path, Number(a.size_bytes)]), [['/workspace/out/report.md', 9], ['/workspace/out/report.md', 15]]);
    assert.equal(artifacts[0]!.workdir_id, session.workdirId);
  });
});
