import assert from 'node:assert/strict';
import { access, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CommandRunner, WorkspaceSessionEnvironments } from '#libs/environments';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { until } from '../support/identity.js';
import { harnessCall, realSession, sandboxedRig, type StoreRig } from '../support/workspaces.js';

// Who makes a workspace and what a call may commit, on the suite's Postgres with real sandboxes:
// a setup whose caller died is taken over (and still runs once, onto what was committed meanwhile),
// a call whose signal aborted (lease lost, cancelled) commits nothing, and idle checkouts are swept.
describe('workspace setup claims and aborted calls', () => {
  let rig: StoreRig;
  let environments: WorkspaceSessionEnvironments;
  let close: () => Promise<void>;
  const bounds = { maxFiles: 1000, maxBytes: 64 * 1024 * 1024 };
  before(async () => {
    ({ rig, environments, close } = await sandboxedRig(env.storageDir));
  });
  after(() => close());

  const versions = async (workdirId: string): Promise<number> =>
    Number((await query<{ n: string }>('SELECT count(*) AS n FROM workspace_versions WHERE workdir_id = $1', [workdirId]))[0]!.n);

  it('a setup whose caller failed mid-way is taken over by the next call, onto a head committed meanwhile, and runs once', async () => {
    const session = await realSession();
    const environment = { setup_commands: ['echo once >> setup.log'] };
    // The first caller's runner fails during the setup (its worker going away).
    const dying = { run: () => Promise.reject(new Error('the worker went away')) } as unknown as CommandRunner;
    await assert.rejects(rig.environments(dying).execute(harnessCall(session, 'shell', { command: 'true' }, environment)), /the worker went away/);
    const [claimed] = await query<{ setup_state: string }>('SELECT setup_state FROM workspaces WHERE workdir_id = $1', [session.workdirId]);
    assert.equal(claimed!.setup_state, 'running');
    // Meanwhile another session's write made a head: the setup must still run, merged onto it.
    const open = await rig.store.open(session.id, session.workdirId, null, bounds);
    await writeFile(path.join(open.checkout.dir, 'early.txt'), 'early\n');
    const early = await rig.store.commit(open, { sessionId: session.id, turnId: null, callId: null }, bounds);
    assert.equal(early.kind, 'committed');

    const next = await environments.execute(harnessCall(session, 'shell', { command: 'cat setup.log early.txt' }, environment));
    assert.equal(next.success, true, next.output);
    assert.match(next.output, /\[workspace set up\]/);
    assert.match(next.output, /once\nearly\n$/);
    const again = await environments.execute(harnessCall(session, 'shell', { command: 'cat setup.log' }, environment));
    assert.equal(again.output, 'once\n', 'the setup ran once');
    const [done] = await query<{ setup_state: string }>('SELECT setup_state FROM workspaces WHERE workdir_id = $1', [session.workdirId]);
    assert.equal(done!.setup_state, 'done');
  });

  it('a call whose signal aborted commits nothing: its writes are dropped and the checkout is back at the head', async () => {
    const session = await realSession();
    const kept = await environments.execute(harnessCall(session, 'write_file', { path: 'kept.txt', content: 'kept\n' }));
    assert.equal(kept.success, true, kept.output);
    const before = await versions(session.workdirId);
    // Aborted before it ran (a write), and while its command runs (a shell call, stopped).
    const early = new AbortController();
    early.abort();
    await environments.execute({ ...harnessCall(session, 'write_file', { path: 'lost.txt', content: 'lost\n' }), signal: early.signal });
    const late = new AbortController();
    const running = environments.execute({ ...harnessCall(session, 'shell', { command: 'echo lost > lost-too.txt; rm kept.txt; sleep 30' }), signal: late.signal });
    const checkout = rig.store.checkoutOf(session.id).dir;
    const started = await until(async () => (await access(path.join(checkout, 'lost-too.txt')).then(() => true, () => undefined)), { attempts: 100 });
    assert.ok(started, 'the command ran');
    late.abort();
    await running;
    assert.equal(await versions(session.workdirId), before, 'no version was committed');
    const [artifacts] = await query<{ n: string }>(`SELECT count(*) AS n FROM session_artifacts WHERE session_id = $1 AND path LIKE '/workspace/lost%'`, [session.id]);
    assert.equal(Number(artifacts!.n), 0);
    const listed = await environments.execute(harnessCall(session, 'list_files', {}));
    assert.doesNotMatch(listed.output, /lost/);
    assert.match(listed.output, /kept\.txt/);
  });

  it('the sweep removes a checkout idle past the bound, never one a call is using; the next call restores it from storage', async () => {
    const session = await realSession();
    await environments.execute(harnessCall(session, 'write_file', { path: 'kept.txt', content: 'kept\n' }));
    const root = rig.store.checkoutOf(session.id).root;
    // A call in flight: its checkout stays, however small the bound.
    const running = environments.execute(harnessCall(session, 'shell', { command: 'touch started; sleep 2; echo done' }));
    assert.ok(await until(() => access(path.join(root, 'workspace', 'started')).then(() => true, () => undefined), { attempts: 100 }), 'the command ran');
    assert.ok(!(await environments.sweepCheckouts(0)).includes(session.id));
    await access(path.join(root, 'workspace', 'kept.txt'));
    assert.equal((await running).output, 'done\n');
    // Idle now: removed, and the next call finds its files again.
    assert.ok((await environments.sweepCheckouts(0)).includes(session.id));
    await assert.rejects(access(root));
    const read = await environments.execute(harnessCall(session, 'read_file', { path: 'kept.txt' }));
    assert.equal(read.success, true, read.output);
    assert.match(read.output, /kept/);
  });
});
