import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API, http } from '../support/http.js';
import { call, newProductUser } from '../support/identity.js';
import { harnessCall, realSession, type StoreRig, storeRig } from '../support/workspaces.js';

// The artifacts routes on the real stack. The files are written by the environment's own code
// (SessionEnvironments wired by hand on the stack's Postgres and store, as the worker wires it):
// the calls a model makes reach it through the runtime, tested where that is wired.
describe('session artifacts', () => {
  let rig: StoreRig;
  let session: { id: string; ownerId: string; workdirId: string };
  before(async () => {
    rig = await storeRig(env.storageDir);
    session = await realSession();
    const environments = rig.environments();
    for (const [file, content] of [['a.txt', 'first'], ['dir/b.md', '# second\n'], ['c.bin', '\u00e9t\u00e9']]) {
      const wrote = await environments.execute(harnessCall(session, 'write_file', { path: file, content }));
      assert.equal(wrote.success, true, wrote.output);
    }
  });
  after(() => rig.dataSource.destroy());

  const base = () => `${API}/sessions/${session.id}/artifacts`;

  it('lists the written files newest first, with their absolute paths, sizes and environment; cursor pages both ways', async () => {
    const all = await http(`${base()}?limit=100`);
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(all.body.data.map((a: any) => [a.path, a.size_bytes]), [['/workspace/c.bin', 5], ['/workspace/dir/b.md', 9], ['/workspace/a.txt', 5]]);
    const first = all.body.data[0];
    assert.deepEqual(Object.keys(first).sort(), ['created_at', 'environment_id', 'id', 'object', 'path', 'session_id', 'size_bytes', 'turn_id']);
    assert.equal(first.object, 'agent.session.artifact');
    assert.equal(first.environment_id, session.workdirId);
    assert.equal(typeof first.created_at, 'number');
    const page1 = await http(`${base()}?limit=2&order=asc`);
    assert.deepEqual(page1.body.data.map((a: any) => a.path), ['/workspace/a.txt', '/workspace/dir/b.md']);
    assert.equal(page1.body.has_more, true);
    const page2 = await http(`${base()}?limit=2&order=asc&after=${page1.body.last_id}`);
    assert.deepEqual(page2.body.data.map((a: any) => a.path), ['/workspace/c.bin']);
    assert.equal(page2.body.has_more, false);
    assert.equal((await http(`${base()}?environment_id=${session.workdirId}`)).body.data.length, 3);
    assert.equal((await http(`${base()}?environment_id=${crypto.randomUUID()}`)).body.data.length, 0);
  });

  it('gets one, and streams its bytes as an attachment with nosniff', async () => {
    const [latest] = (await http(`${base()}?limit=1`)).body.data;
    const one = await http(`${base()}/${latest.id}`);
    assert.deepEqual(one.body, latest);
    const res = await fetch(`${env.apiUrl}${base()}/${latest.id}/content`, { headers: { authorization: `Bearer ${env.apiKey}` } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.match(res.headers.get('content-disposition')!, /^attachment; filename="c\.bin"/);
    assert.equal(Buffer.from(await res.arrayBuffer()).toString('utf8'), '\u00e9t\u00e9');
  });

  it('another owner\'s session, another session\'s artifact, and ids that are not artifacts are 404; a foreign cursor is 400', async () => {
    const [artifact] = (await http(`${base()}?limit=1`)).body.data;
    const stranger = await newProductUser('artifact stranger');
    for (const path of [base(), `${base()}/${artifact.id}`, `${base()}/${artifact.id}/content`]) {
      assert.equal((await call(stranger.caller, path)).status, 404, path);
    }
    assert.equal((await call(stranger.caller, `${base()}/${artifact.id}`, { method: 'DELETE' })).status, 404);
    const other = await realSession();
    const elsewhere = `${API}/sessions/${other.id}/artifacts`;
    assert.equal((await http(`${elsewhere}/${artifact.id}`)).status, 404);
    assert.equal((await http(`${elsewhere}/${artifact.id}/content`)).status, 404);
    assert.equal((await http(`${elsewhere}/${artifact.id}`, { method: 'DELETE' })).status, 404);
    assert.equal((await http(`${base()}/not-an-id`)).status, 404);
    assert.equal((await http(`${API}/sessions/${crypto.randomUUID()}/artifacts`)).status, 404);
    assert.equal((await http(`${elsewhere}?after=${artifact.id}`)).status, 400);
    assert.equal((await http(`${base()}?environment_id=nope`)).status, 422);
  });

  it('delete removes the artifact, not the workspace\'s file', async () => {
    const target = (await http(`${base()}?order=asc&limit=1`)).body.data[0];
    const deleted = await http(`${base()}/${target.id}`, { method: 'DELETE' });
    assert.deepEqual(deleted.body, { id: target.id, object: 'agent.session.artifact.deleted', deleted: true });
    assert.equal((await http(`${base()}/${target.id}`)).status, 404);
    assert.equal((await http(`${base()}/${target.id}`, { method: 'DELETE' })).status, 404);
    assert.ok(!(await http(`${base()}?limit=100`)).body.data.some((a: any) => a.id === target.id));
    const read = await rig.environments().execute(harnessCall(session, 'read_file', { path: 'a.txt' }));
    assert.equal(read.output, 'first');
  });
});
