import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { WorkspaceSessionEnvironments } from '#libs/environments';
import { BwrapSandbox } from '#libs/sandbox';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, http, newKey } from '../support/http.js';
import { until } from '../support/identity.js';
import { harnessCall, realSession, sandboxedRig, storeRig } from '../support/workspaces.js';

// The worker's SessionEnvironments with real bubblewrap sandboxes, on the suite's Postgres: a new
// workspace's setup (files, setup commands once), shell calls committed as versions, and what a
// command plants (symlinks out of the workspace) never followed by the worker's tools.
describe('session environments with real sandboxes', () => {
  let sandbox: BwrapSandbox;
  let environments: WorkspaceSessionEnvironments;
  let close: () => Promise<void>;
  before(async () => {
    // The stack's own store: the environment's files are the caller's uploads, read from there.
    ({ sandbox, environments, close } = await sandboxedRig(env.storageDir));
  });
  after(() => close());

  it('the first call makes the workspace (files placed, setup run once, a missing file said) and runs in it', async () => {
    const session = await realSession();
    const draft = await uploadDraft('hello from a file\n', 'input.txt');
    const withFiles = environments;
    const environment = {
      files: [
        { type: 'file_id' as const, file_id: draft.id, path: 'data/input.txt' },
        { type: 'file_id' as const, file_id: '0'.repeat(32), path: 'missing.txt' },
      ],
      setup_commands: ['echo once >> setup.log', 'cp data/input.txt copy.txt'],
    };
    const first = await withFiles.execute(harnessCall(session, 'shell', { command: 'cat copy.txt && echo made > made.txt' }, environment));
    assert.equal(first.success, true, first.output);
    assert.match(first.output, /\[workspace set up\]/);
    assert.match(first.output, new RegExp(`error: file ${'0'.repeat(32)} was not found`));
    assert.match(first.output, /hello from a file\n$/);
    assert.equal(first.command?.exitCode, 0);
    assert.equal(first.command?.cwd, '/workspace');
    assert.ok(first.workspaceVersionId);
    const again = await withFiles.execute(harnessCall(session, 'shell', { command: 'cat setup.log' }, environment));
    assert.equal(again.output, 'once\n');
    const [workspace] = await query<{ setup_state: string; setup_output: string }>('SELECT setup_state, setup_output FROM workspaces WHERE workdir_id = $1', [session.workdirId]);
    assert.equal(workspace!.setup_state, 'done');
    assert.match(workspace!.setup_output, /\$ echo once >> setup\.log/);
  });

  it('a failing command is not a success; its exit code is kept', async () => {
    const session = await realSession();
    const failed = await environments.execute(harnessCall(session, 'shell', { command: 'echo out; exit 3' }));
    assert.equal(failed.success, false);
    assert.equal(failed.command?.exitCode, 3);
    assert.equal(failed.output, 'out\n');
  });

  it('symlinks a command plants out of the workspace are versioned as links and never followed by the tools', async () => {
    const session = await realSession();
    const planted = await environments.execute(harnessCall(session, 'shell', { command: 'ln -s /etc/shadow leak && ln -s / root && echo ok' }));
    assert.equal(planted.success, true, planted.output);
    for (const target of ['leak', 'root/etc/shadow', '/workspace/root/etc/passwd']) {
      const read = await environments.execute(harnessCall(session, 'read_file', { path: target }));
      assert.equal(read.success, false, target);
      assert.doesNotMatch(read.output, /root:/);
    }
    const write = await environments.execute(harnessCall(session, 'write_file', { path: 'root/tmp/escaped', content: 'x' }));
    assert.equal(write.success, false);
    const listed = await environments.execute(harnessCall(session, 'list_files', {}));
    assert.match(listed.output, /^"leak" -> "\/etc\/shadow"$/m);
    // The commit recorded links, not what they point to: no artifact is a link.
    const artifacts = await query<{ path: string }>('SELECT path FROM session_artifacts WHERE session_id = $1', [session.id]);
    assert.deepEqual(artifacts, []);
  });

  it('a command writing past the workspace bound keeps nothing and says why', async () => {
    const session = await realSession();
    const small = await storeRig(await mkdtemp(path.join(tmpdir(), 'yx-blobs-')), { SANDBOX_UID: '65534', SANDBOX_GID: '65534', SANDBOX_WORKSPACE_MAX_FILES: '5' });
    const bounded = small.environments(sandbox);
    const flood = await bounded.execute(harnessCall(session, 'shell', { command: 'for i in $(seq 1 10); do echo $i > f$i; done; echo wrote' }));
    assert.equal(flood.success, false);
    assert.match(flood.output, /not kept: the workspace would hold more than 5 files/);
    assert.equal(flood.workspaceVersionId, undefined);
    const after = await bounded.execute(harnessCall(session, 'list_files', {}));
    assert.doesNotMatch(after.output, /f1 /);
    await small.dataSource.destroy();
  });

  it('the workdir\'s attachments are files under attachments/, each copied once: one attached later joins before the next call', async () => {
    const first = await uploadDraft('first attachment\n', 'notes.txt');
    const created = await http(`${API}/sessions`, { idempotencyKey: newKey('create'), body: { agent_id: 'default-chatbot', input: 'files', yuxi: { attachment_file_ids: [first.id] } } });
    assert.equal(created.status, 201, created.text);
    const [row] = await query<{ owner_id: string; workdir_id: string }>('SELECT owner_id, workdir_id FROM sessions WHERE id = $1', [created.body.id]);
    const session = { id: created.body.id as string, ownerId: row!.owner_id, workdirId: row!.workdir_id };
    const ready = (fileId: string) =>
      until(async () => ((await http(`${API}/sessions/${session.id}/attachments?limit=100`)).body.data.some((a: any) => a.id === fileId && a.status === 'ready') ? true : undefined), { attempts: 200, intervalMs: 100 });
    assert.ok(await ready(first.id));
    const listed = await environments.execute(harnessCall(session, 'list_files', {}));
    assert.match(listed.output, /^"attachments\/notes\.txt" \(17 bytes\)$/m);
    // The agent deletes it: it stays deleted (copied once).
    assert.equal((await environments.execute(harnessCall(session, 'shell', { command: 'rm attachments/notes.txt' }))).success, true);
    const second = await uploadDraft('second attachment\n', 'notes.txt');
    const followUp = await http(`${API}/sessions/${session.id}/events`, {
      idempotencyKey: newKey('event'),
      body: { events: [{ type: 'agent.session.input.message', input: 'more', yuxi: { mode: 'follow_up', attachment_file_ids: [second.id] } }] },
    });
    assert.equal(followUp.status, 202, followUp.text);
    assert.ok(await ready(second.id));
    const read = await environments.execute(harnessCall(session, 'read_file', { path: 'attachments/notes.txt' }));
    assert.equal(read.output, 'second attachment\n');
    const artifacts = await query<{ path: string }>('SELECT path FROM session_artifacts WHERE session_id = $1', [session.id]);
    assert.deepEqual(artifacts, [], 'attachments are not artifacts of a call');
  });
});
