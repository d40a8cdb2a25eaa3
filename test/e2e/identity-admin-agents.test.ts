import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { API, type HttpResult, newKey } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type CallOptions, type Caller, createKey, createSessionAs, listSessionIds, newProductUser, signToken } from '../support/identity.js';

/** `caller` with an `X-App-Id` header added to every request it makes. */
function withAppHeader(caller: Caller, appId: string): { name: string; send: (path: string, options?: CallOptions) => Promise<HttpResult> } {
  return {
    name: `${caller.name} claiming app ${appId}`,
    send: (path, options = {}) => call(caller, path, { ...options, headers: { ...options.headers, 'x-app-id': appId } }),
  };
}

describe('identity: a client X-App-Id header', () => {
  it('changes nothing: the app, end user and owner always come from the key', async () => {
    const { userId, caller: product } = await newProductUser('app header owner');
    const appOne = `hdr-one-${randomUUID().slice(0, 8)}`;
    const appTwo = `hdr-two-${randomUUID().slice(0, 8)}`;
    const keyOne = await createKey({ user_id: userId, app_id: appOne });
    const keyTwo = await createKey({ user_id: userId, app_id: appTwo });
    const endUser = `eu-${randomUUID()}`;
    const one = asEndUser({ name: 'app one key', token: keyOne.secret }, endUser, 'app one end user');
    const two = asEndUser({ name: 'app two key', token: keyTwo.secret }, endUser, 'app two end user with the same id');

    // Who the server says the caller is: identical with and without a header naming another app.
    const plainMe = (await call(one, '/api/v1/me')).body;
    const claimed = withAppHeader(one, appTwo);
    const claimedMe = await claimed.send('/api/v1/me');
    assert.equal(claimedMe.status, 200, claimedMe.text);
    assert.deepEqual(claimedMe.body, plainMe);
    assert.equal(claimedMe.body.app_id, appOne);

    // A session created while claiming app two belongs to app one's end user.
    const created = await claimed.send(`${API}/sessions`, { body: { agent_id: 'default-chatbot' }, idempotencyKey: newKey('create') });
    assert.equal(created.status, 201, created.text);
    const sessionId = created.body.id as string;
    assert.ok((await listSessionIds(one)).includes(sessionId), 'app one\'s end user lists it without the header');
    assert.ok(!(await listSessionIds(two)).includes(sessionId), 'app two\'s end user of the same id never sees it');
    assert.equal((await call(two, `${API}/sessions/${sessionId}`)).status, 404);
    // Nor does claiming app one from app two's key open it.
    assert.equal((await withAppHeader(two, appOne).send(`${API}/sessions/${sessionId}`)).status, 404);
    const listedClaiming = (await claimed.send(`${API}/sessions?limit=100`)).body.data.map((s: any) => s.id);
    assert.deepEqual(listedClaiming, (await call(one, `${API}/sessions?limit=100`)).body.data.map((s: any) => s.id), 'the same list with or without it');

    // Unbound credentials (an unbound key, a user token) are not made app callers by it: 200, no app.
    const tokenCaller: Caller = { name: 'user token', token: await signToken() };
    for (const caller of [product, tokenCaller]) {
      const plain = (await call(caller, '/api/v1/me')).body;
      const header = await withAppHeader(caller, appOne).send('/api/v1/me');
      assert.equal(header.status, 200, `${caller.name}: ${header.text}`);
      assert.deepEqual(header.body, plain, caller.name);
      assert.equal(header.body.app_id, null);
      const own = await createSessionAs(caller);
      const seen = await withAppHeader(caller, appOne).send(`${API}/sessions/${own.id}`);
      assert.equal(seen.status, 200, `${caller.name} reads its own session with the header`);
      assert.ok(!(await listSessionIds(one)).includes(own.id), `${caller.name}'s session is not app one's`);
    }
  });
});

describe('identity: an administrator and another user\'s private agent', () => {
  it('reads, replaces and deletes it; the owner keeps it private and sees each change', async () => {
    const { caller: owner } = await newProductUser('private agent owner');
    const { caller: stranger } = await newProductUser('private agent stranger');
    const agentId = `adm-${randomUUID().slice(0, 8)}`;
    const put = await call(owner, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Mine', model: 'scripted:echo', instructions: 'owner prompt', visibility: 'private' } });
    assert.equal(put.status, 201, put.text);

    // Reads: the administrator's list shows it with its instructions, and its history.
    const listed = (await call(bootstrap, `${ADMIN}/agents`)).body.data.find((a: any) => a.id === agentId);
    assert.ok(listed, 'the administrator lists another user\'s private agent');
    assert.equal(listed.yuxi.visibility, 'private');
    assert.equal(listed.yuxi.instructions, 'owner prompt');
    const history = await call(bootstrap, `${ADMIN}/agents/${agentId}/versions`);
    assert.equal(history.status, 200, history.text);
    assert.deepEqual(history.body.data.map((v: any) => v.version), [1]);
    assert.equal(history.body.data[0].definition.instructions, 'owner prompt');
    // A user without a role does neither.
    assert.ok(!(await call(stranger, `${ADMIN}/agents`)).body.data.some((a: any) => a.id === agentId));

    // Replaces: the next version, still the owner's and private.
    const replaced = await call(bootstrap, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Replaced by admin', model: 'scripted:echo', instructions: 'admin prompt', visibility: 'private' } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.yuxi.version, 2);
    const seenByOwner = await call(owner, `${API}/${agentId}`);
    assert.equal(seenByOwner.status, 200, 'the owner still has it');
    assert.equal(seenByOwner.body.name, 'Replaced by admin');
    assert.equal(seenByOwner.body.yuxi.version, 2);
    const ownersList = (await call(owner, `${ADMIN}/agents`)).body.data.find((a: any) => a.id === agentId);
    assert.equal(ownersList.yuxi.instructions, 'admin prompt');
    assert.equal((await call(stranger, `${API}/${agentId}`)).status, 404, 'still private');
    const session = await createSessionAs(owner, undefined, newKey('create'), agentId);
    assert.equal(session.agent.id, agentId, 'the owner runs the replaced agent');
    const versions = (await call(bootstrap, `${ADMIN}/agents/${agentId}/versions`)).body.data;
    assert.deepEqual(versions.map((v: any) => v.version), [2, 1]);
    assert.notEqual(versions[0].actor_id, versions[1].actor_id, 'the replacement is the administrator\'s, the creation the owner\'s');

    // Deletes: gone for the owner too.
    const deleted = await call(bootstrap, `${ADMIN}/agents/${agentId}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { id: agentId, object: 'agent.deleted', deleted: true });
    assert.equal((await call(owner, `${API}/${agentId}`)).status, 404);
    assert.ok(!(await call(owner, `${ADMIN}/agents`)).body.data.some((a: any) => a.id === agentId));
    assert.ok(!(await call(bootstrap, `${ADMIN}/agents`)).body.data.some((a: any) => a.id === agentId));
    const refused = await call(owner, `${API}/sessions`, { body: { agent_id: agentId }, idempotencyKey: newKey('create') });
    assert.equal(refused.status, 404, 'no new session with it');
    assert.equal((await call(owner, `${API}/sessions/${session.id}`)).status, 200, 'its session stays');
  });
});
