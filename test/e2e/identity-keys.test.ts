import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, asEndUser, bootstrap, call, type Caller, createKey, listSessionIds, newProductUser, until } from '../support/identity.js';

const KEY_FORMAT = /^yuxi_[0-9A-Za-z]{36}[0-9A-Za-z]{6}$/;

/** Every audit entry, newest first, following cursors until `found` matches every wanted target (bounded). */
async function auditEntriesFor(targetIds: string[]): Promise<any[]> {
  const wanted = new Set(targetIds);
  const found: any[] = [];
  let after: string | null = null;
  for (let page = 0; page < 50; page += 1) {
    const res: any = await call(bootstrap, `${ADMIN}/audit?limit=100${after ? `&after=${after}` : ''}`);
    assert.equal(res.status, 200, res.text);
    found.push(...res.body.data.filter((e: any) => wanted.has(e.target.id)));
    if (!res.body.has_more) break;
    after = res.body.last_id;
  }
  return found;
}

describe('identity: API keys', () => {
  it('creates a key whose secret is shown at creation, in the documented format, and not in the key list', async () => {
    const { userId, key, caller } = await newProductUser('key owner', { name: 'lifecycle', rate_limit_per_minute: 500, max_streams: 3 });
    assert.match(key.secret, KEY_FORMAT);
    assert.equal(key.body.object, 'api_key');
    assert.equal(key.body.user_id, userId);
    assert.equal(key.body.access, 'full');
    assert.equal(key.body.app_id, null);
    assert.equal(key.body.rate_limit_per_minute, 500);
    assert.equal(key.body.max_streams, 3);
    assert.equal(key.body.last_used_at, null);
    assert.equal(key.body.revoked_at, null);
    assert.ok(key.secret.startsWith(key.body.prefix), 'the prefix is the start of the secret');

    // A typo in the checksum is refused like an unknown key.
    const last = key.secret.at(-1)!;
    const typo = `${key.secret.slice(0, -1)}${last === 'A' ? 'B' : 'A'}`;
    assert.equal((await call({ name: 'typo', token: typo }, `${API}/sessions`)).status, 401);

    assert.equal((await call(caller, `${API}/sessions`)).status, 200);
    for (const lister of [caller, bootstrap]) {
      const list = await call(lister, `${ADMIN}/api-keys`);
      assert.equal(list.status, 200, list.text);
      const listed = list.body.data.find((k: any) => k.id === key.id);
      assert.ok(listed, `${lister.name} lists the key`);
      assert.equal('secret' in listed, false);
      assert.ok(!list.text.includes(key.secret), 'no secret anywhere in the list');
      assert.ok(list.body.data.every((k: any) => !('secret' in k)));
    }
    const own = await call(caller, `${ADMIN}/api-keys`);
    assert.ok(own.body.data.every((k: any) => k.user_id === userId), 'a non-administrator lists only its own keys');

    // last_used_at is written off the request path: wait for it, bounded.
    const used = await until(async () => {
      const list = await call(caller, `${ADMIN}/api-keys`);
      const stamp = list.body.data.find((k: any) => k.id === key.id)?.last_used_at;
      return typeof stamp === 'number' ? stamp : undefined;
    });
    assert.equal(typeof used, 'number', 'last_used_at is set after use');
    assert.ok(Math.abs(used! - Date.now() / 1000) < 120);
  });

  it('lets a non-administrator create keys for itself only (403 for another user_id)', async () => {
    const { userId, caller } = await newProductUser('non-admin');
    const forOther = await call(caller, `${ADMIN}/api-keys`, { body: { name: 'for someone else', access: 'full', user_id: randomUUID() } });
    assert.equal(forOther.status, 403, forOther.text);
    assert.equal(forOther.body.error.code, 'forbidden');
    const forSelfExplicit = await call(caller, `${ADMIN}/api-keys`, { body: { name: 'mine', access: 'agents', user_id: userId } });
    assert.equal(forSelfExplicit.status, 201, forSelfExplicit.text);
    assert.equal(forSelfExplicit.body.user_id, userId);
    const forSelf = await call(caller, `${ADMIN}/api-keys`, { body: { name: 'mine too', access: 'full' } });
    assert.equal(forSelf.status, 201, forSelf.text);
    assert.equal(forSelf.body.user_id, userId);
    const audit = await call(caller, `${ADMIN}/audit`);
    assert.equal(audit.status, 403, 'the audit trail is for administrators');
    assert.equal(audit.body.error.code, 'forbidden');
  });

  it('refuses an expiry in the past at creation (422)', async () => {
    const res = await call(bootstrap, `${ADMIN}/api-keys`, { body: { name: 'expired', access: 'full', expires_at: new Date(Date.now() - 60_000).toISOString() } });
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.error.code, 'validation_failed');
    const future = await createKey({ expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    assert.equal(typeof future.body.expires_at, 'number');
    assert.equal((await call({ name: 'expiring later', token: future.secret }, `${API}/sessions`)).status, 200, 'a key expiring later works now');
  });

  it('revokes a key at once on both api replicas, even where it was cached', async () => {
    const { caller, key } = await newProductUser('revoked');
    for (const baseUrl of [env.apiUrl, env.apiUrl2, env.apiUrl, env.apiUrl2]) {
      const res = await call(caller, `${API}/sessions`, { baseUrl });
      assert.equal(res.status, 200, `usable on ${baseUrl} before revocation`);
    }
    const revoke = await call(bootstrap, `${ADMIN}/api-keys/${key.id}`, { method: 'DELETE' });
    assert.equal(revoke.status, 200, revoke.text);
    assert.deepEqual(revoke.body, { id: key.id, object: 'api_key.deleted', deleted: true });
    for (const baseUrl of [env.apiUrl2, env.apiUrl, env.apiUrl2]) {
      const res = await call(caller, `${API}/sessions`, { baseUrl });
      assert.equal(res.status, 401, `refused on ${baseUrl} right after revocation`);
      assert.equal(res.body.error.code, 'unauthorized');
    }
    const again = await call(bootstrap, `${ADMIN}/api-keys/${key.id}`, { method: 'DELETE' });
    assert.equal(again.status, 404, 'a revoked key cannot be revoked twice');
    const listed = (await call(bootstrap, `${ADMIN}/api-keys`)).body.data.find((k: any) => k.id === key.id);
    assert.equal(typeof listed.revoked_at, 'number');
  });

  it("does not let a non-administrator revoke another user's key (404)", async () => {
    const owner = await newProductUser('victim');
    const other = await newProductUser('intruder');
    const res = await call(other.caller, `${ADMIN}/api-keys/${owner.key.id}`, { method: 'DELETE' });
    assert.equal(res.status, 404, res.text);
    assert.equal((await call(owner.caller, `${API}/sessions`)).status, 200, 'the key still works');
  });

  it('resolves concurrent first use of one end-user id, on both replicas, to one principal', async () => {
    const { userId } = await newProductUser('app owner');
    const appId = `race-app-${randomUUID().slice(0, 8)}`;
    const appKey = await createKey({ user_id: userId, app_id: appId });
    const app: Caller = { name: 'app key', token: appKey.secret };
    const endUser = `racer-${randomUUID()}`;
    const racer = asEndUser(app, endUser);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call(racer, `${API}/sessions`, { body: { agent_id: 'default-chatbot' }, idempotencyKey: newKey(`race-${i}`), baseUrl: i % 2 === 0 ? env.apiUrl : env.apiUrl2 }),
      ),
    );
    assert.deepEqual(results.map((r) => r.status), Array(10).fill(201), results.map((r) => r.text).join('\n'));
    const created = results.map((r) => r.body.id as string);
    assert.equal(new Set(created).size, 10);

    const rows = await query<{ id: string }>(`SELECT id FROM users WHERE kind = 'end_user' AND parent_id = $1 AND app_id = $2 AND external_id = $3`, [userId, appId, endUser]);
    assert.equal(rows.length, 1, 'one principal row');
    const owners = await query<{ owner_id: string }>(`SELECT DISTINCT owner_id FROM sessions WHERE id = ANY($1::uuid[])`, [created]);
    assert.deepEqual(owners.map((o) => o.owner_id), [rows[0]!.id], 'every session belongs to it');

    for (const baseUrl of [env.apiUrl, env.apiUrl2]) {
      assert.deepEqual(new Set(await listSessionIds(racer, baseUrl)), new Set(created), `all ten listed for the end user on ${baseUrl}`);
      assert.deepEqual(await listSessionIds(asEndUser(app, `other-${randomUUID()}`), baseUrl), [], 'none for another end user');
      assert.deepEqual(await listSessionIds(asEndUser(app, undefined), baseUrl), [], "none for the app's default end user");
    }
  });

  it('records key creation and revocation and agent creation in the audit trail, with their actor', async () => {
    const { userId, caller, key: ownerKey } = await newProductUser('audited');
    const created = await call(caller, `${ADMIN}/api-keys`, { body: { name: 'audited key', access: 'agents' } });
    assert.equal(created.status, 201, created.text);
    const revoked = await call(caller, `${ADMIN}/api-keys/${created.body.id}`, { method: 'DELETE' });
    assert.equal(revoked.status, 200, revoked.text);
    const agentId = `audited-${randomUUID().slice(0, 8)}`;
    // Public agents are for administrators: an ordinary user manages private ones.
    const publicPut = await call(caller, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Audited', model: 'scripted:audited' } });
    assert.equal(publicPut.status, 403, publicPut.text);
    const put = await call(caller, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Audited', model: 'scripted:audited', visibility: 'private' } });
    assert.equal(put.status, 201, put.text);
    const replaced = await call(caller, `${ADMIN}/agents/${agentId}`, { method: 'PUT', body: { name: 'Audited again', model: 'scripted:audited', visibility: 'private' } });
    assert.equal(replaced.status, 200, replaced.text);
    const deleted = await call(caller, `${ADMIN}/agents/${agentId}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);

    const entries = await auditEntriesFor([created.body.id, agentId, ownerKey.id]);
    const actions = (target: string) => entries.filter((e) => e.target.id === target).map((e) => e.action).sort();
    assert.deepEqual(actions(created.body.id), ['api_key.created', 'api_key.revoked']);
    assert.deepEqual(actions(agentId), ['agent.created', 'agent.deleted', 'agent.replaced']);
    for (const entry of entries.filter((e) => e.target.id !== ownerKey.id)) {
      assert.equal(entry.object, 'audit_entry');
      assert.equal(entry.actor_id, userId, `${entry.action}: the acting user`);
      assert.equal(entry.key_id, ownerKey.id, `${entry.action}: the key it used`);
      assert.equal(entry.target.type, entry.action.startsWith('agent.') ? 'agent' : 'api_key');
      assert.equal(typeof entry.created_at, 'number');
      assert.ok(!JSON.stringify(entry).includes(ownerKey.secret), 'no secret in the trail');
    }
    // The owner's own key was made by the bootstrap administrator on the user's behalf.
    const ownerCreated = entries.find((e) => e.target.id === ownerKey.id && e.action === 'api_key.created');
    assert.ok(ownerCreated, 'the key made for the user is audited too');
    assert.notEqual(ownerCreated.actor_id, userId, 'its actor is the administrator, not the owner');
    assert.equal(ownerCreated.details.user_id, userId);

    const forbidden = await call(caller, `${ADMIN}/audit`);
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.error.code, 'forbidden');
  });
});
