import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { WorkspaceSessionEnvironments } from '#libs/environments';
import { BwrapSandbox } from '#libs/sandbox';
import { harnessCall, realSession, type StoreRig, storeRig } from '../support/workspaces.js';

// What a command or the model can do to a workspace's file system that the worker must survive as
// a tool's answer, never a failed call: names that are not UTF-8, unreadable directories, paths
// too long, names that would forge listing lines; and large files streamed through commit and checkout.
describe('session environments: file system edges', () => {
  let rig: StoreRig;
  let other: StoreRig;
  let sandbox: BwrapSandbox;
  let environments: WorkspaceSessionEnvironments;
  before(async () => {
    const blobs = await mkdtemp(path.join(tmpdir(), 'yx-blobs-'));
    const settings = { SANDBOX_UID: '65534', SANDBOX_GID: '65534', SANDBOX_TIMEOUT_S: '30' };
    rig = await storeRig(blobs, settings);
    // A second worker, with a small file bound.
    other = await storeRig(blobs, { ...settings, SANDBOX_WORKSPACE_MAX_FILES: '3' });
    sandbox = new BwrapSandbox({ uid: 65534, gid: 65534 });
    environments = rig.environments(sandbox);
  });
  after(async () => {
    await sandbox.close();
    await rig.dataSource.destroy();
    await other.dataSource.destroy();
  });

  it('a name that is not UTF-8 refuses the commit with a clear output and is removed; the workspace goes on', async () => {
    const session = await realSession();
    const made = await environments.execute(harnessCall(session, 'shell', { command: 'echo kept > kept.txt && echo ok' }));
    assert.equal(made.success, true, made.output);
    const bad = await environments.execute(harnessCall(session, 'shell', { command: `mkdir sub && printf x > "sub/$(printf 'a\\377b')" && echo other > other.txt` }));
    assert.equal(bad.success, false, bad.output);
    assert.match(bad.output, /sub\/a\ufffdb is not a valid UTF-8 name/);
    const after = await environments.execute(harnessCall(session, 'shell', { command: 'ls -A sub 2>&1; ls' }));
    assert.equal(after.success, true, after.output);
    assert.doesNotMatch(after.output, /other\.txt|a.b/, 'nothing of the refused call is kept, the bad name is gone');
    assert.match(after.output, /kept\.txt/);
  });

  it('every entry counts against the file bound, pipes and sockets too', async () => {
    const session = await realSession();
    const fifos = await other.environments(sandbox).execute(harnessCall(session, 'shell', { command: 'for i in 1 2 3 4; do mkfifo p$i; done' }));
    assert.equal(fifos.success, false, fifos.output);
    assert.match(fifos.output, /more than 3 files/);
  });

  it('a directory a command made unreadable (chmod 000) is not a failed call, and the next call works', async () => {
    const session = await realSession();
    const locked = await environments.execute(harnessCall(session, 'shell', { command: 'mkdir -p d/e && echo x > d/e/f && chmod 000 d/e d && echo done' }));
    assert.equal(locked.output.includes('done'), true, locked.output);
    const next = await environments.execute(harnessCall(session, 'shell', { command: 'echo next > n.txt && cat n.txt' }));
    assert.equal(next.success, true, next.output);
    const listed = await environments.execute(harnessCall(session, 'list_files', {}));
    assert.equal(listed.success, true, listed.output);
  });

  it('a path too long for the file system is a tool error', async () => {
    const session = await realSession();
    const longPath = Array.from({ length: 20 }, (_, index) => `${index}`.padEnd(200, 'x')).join('/');
    const written = await environments.execute(harnessCall(session, 'write_file', { path: longPath, content: 'x' }));
    assert.equal(written.success, false);
    assert.match(written.output, /too long/);
    const read = await environments.execute(harnessCall(session, 'read_file', { path: longPath }));
    assert.equal(read.success, false);
  });

  it('list_files shows names escaped: a newline in a name cannot forge a line', async () => {
    const session = await realSession();
    const made = await environments.execute(harnessCall(session, 'shell', { command: `printf x > "$(printf 'evil\\nfake.txt (1 bytes)')" && echo ok` }));
    assert.equal(made.success, true, made.output);
    const listed = await environments.execute(harnessCall(session, 'list_files', {}));
    assert.equal(listed.success, true, listed.output);
    assert.deepEqual(listed.output.split('\n'), ['"evil\\nfake.txt (1 bytes)" (1 bytes)']);
  });

  it('a 50 MB file is streamed through a commit and another worker\'s checkout, byte for byte', async () => {
    const session = await realSession();
    const made = await environments.execute(harnessCall(session, 'shell', { command: 'echo ok' }));
    assert.equal(made.success, true, made.output);
    const head = (await rig.repository.state(session.workdirId))!.head!;
    const bounds = { maxFiles: 100, maxBytes: 200 * 1024 * 1024 };
    const open = await rig.store.open(session.id, session.workdirId, head, bounds);
    const chunk = randomBytes(1024 * 1024);
    const big = Buffer.concat(Array.from({ length: 50 }, (_, index) => Buffer.concat([Buffer.from(`${index}`), chunk.subarray(8)])));
    await writeFile(path.join(open.checkout.dir, 'big.bin'), big);
    const streamed = rig.storage.streamed;
    const committed = await rig.store.commit(open, { sessionId: session.id, turnId: null, callId: null }, bounds);
    assert.equal(committed.kind, 'committed');
    assert.equal(rig.storage.streamed - streamed, 1, 'the file went up as a stream');
    const head2 = (await rig.repository.state(session.workdirId))!.head!;
    const second = await other.store.open(session.id, session.workdirId, head2, bounds);
    const copy = await readFile(path.join(second.checkout.dir, 'big.bin'));
    assert.equal(createHash('sha256').update(copy).digest('hex'), createHash('sha256').update(big).digest('hex'));
  });
});
