import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ADMIN, bootstrap, call, type Caller, signToken } from '../support/identity.js';

/** The stack's USER_TOKEN_KEY_MAX_TTL_S: the default, 30 days. */
const MAX_TTL_S = 30 * 24 * 3600;

describe('identity: keys minted with a user token', () => {
  it('expire within USER_TOKEN_KEY_MAX_TTL_S whatever they ask; keys minted with a key keep theirs', async () => {
    const subject = `minter-${randomUUID().slice(0, 8)}`;
    const token: Caller = { name: 'user token', token: await signToken({ subject }) };
    const now = Math.floor(Date.now() / 1000);
    const mint = (caller: Caller, expiresAt?: number) =>
      call(caller, `${ADMIN}/api-keys`, { body: { name: `k-${randomUUID().slice(0, 8)}`, access: 'full', ...(expiresAt ? { expires_at: new Date(expiresAt * 1000).toISOString() } : {}) } });

    const forever = await mint(token);
    assert.equal(forever.status, 201, forever.text);
    assert.ok(typeof forever.body.expires_at === 'number', 'no expiry asked: the bound is given');
    assert.ok(Math.abs(forever.body.expires_at - (now + MAX_TTL_S)) < 120, `expires in ${MAX_TTL_S} s (${forever.body.expires_at - now})`);
    const longer = await mint(token, now + 365 * 24 * 3600);
    assert.equal(longer.status, 201, longer.text);
    assert.ok(Math.abs(longer.body.expires_at - (now + MAX_TTL_S)) < 120, 'a later expiry is brought to the bound');
    const shorter = await mint(token, now + 3600);
    assert.equal(shorter.status, 201, shorter.text);
    assert.equal(shorter.body.expires_at, now + 3600, 'an expiry within the bound is kept');
    // The key works (it is a real key of the token's user).
    const me: any = await call({ name: 'minted key', token: forever.body.secret }, '/api/v1/me');
    assert.equal(me.status, 200, me.text);

    const byKey = await mint(bootstrap);
    assert.equal(byKey.status, 201, byKey.text);
    assert.equal(byKey.body.expires_at, null, 'a key minted with a key may live without expiry');
  });
});
