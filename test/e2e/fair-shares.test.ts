import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { ADMIN, asEndUser, call, type Caller, createKey, createSessionAs, newProductUser, openRawStream, type RawStream, signToken, until } from '../support/identity.js';

// Fair shares, on the replica with tight limits (scripts/test.mjs FAIR_SHARE_LIMITS):
// USER_RATE_LIMIT_PER_MINUTE=30, APP_RATE_LIMIT_PER_MINUTE=20, MAX_STREAMS_PER_ACCOUNT=3,
// MAX_KEYS_PER_USER=3, NEW_END_USERS_PER_MINUTE=4, AUTH_FAILURE_LIMIT_PER_MINUTE=10. Limits are
// counted per limit value, so only requests made to that replica are in these counts; every
// test uses fresh users. Limits under 100 per minute are leased one point at a time: exact.
const TIGHT = env.apiUrlFileLimits;
const USER_LIMIT = 30;
const APP_LIMIT = 20;
const LIST = `${API}/sessions?limit=1`;

function assertThrottled(res: { status: number; text: string; body: any; headers: Headers }, code: string, what: string): void {
  assert.equal(res.status, 429, `${what}: ${res.text}`);
  assert.equal(res.body.error.code, code, what);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `${what}: Retry-After ${res.headers.get('retry-after')}`);
}

describe('fair shares: minting keys or end users buys nothing', () => {
  it('shares one allowance among all keys of a user (USER_RATE_LIMIT_PER_MINUTE): a new key does not reset it', async () => {
    const userId = randomUUID();
    const keys = await Promise.all([1, 2, 3].map(() => createKey({ user_id: userId })));
    const callers: Caller[] = keys.map((key, i) => ({ name: `key ${i + 1}`, token: key.secret }));
    for (let i = 0; i < USER_LIMIT; i += 1) {
      const res = await call(callers[i % 2]!, LIST, { baseUrl: TIGHT });
      assert.equal(res.status, 200, `request ${i + 1}: ${res.text}`);
    }
    // Each key made at most 15 requests, far under its own limit: the user's allowance is spent.
    assertThrottled(await call(callers[2]!, LIST, { baseUrl: TIGHT }), 'rate_limited', 'a third, unused key of the same user');
    assertThrottled(await call(callers[0]!, LIST, { baseUrl: TIGHT }), 'rate_limited', 'the first key');
    // Another user is unaffected.
    const other = await newProductUser('another user');
    assert.equal((await call(other.caller, LIST, { baseUrl: TIGHT })).status, 200);
  });

  it('shares one allowance among all keys of an app (APP_RATE_LIMIT_PER_MINUTE); the user’s other keys keep theirs', async () => {
    const userId = randomUUID();
    const [first, second, unbound] = await Promise.all([createKey({ user_id: userId, app_id: 'shop' }), createKey({ user_id: userId, app_id: 'shop' }), createKey({ user_id: userId })]);
    const shop: Caller[] = [
      { name: 'shop key 1', token: first.secret },
      { name: 'shop key 2', token: second.secret },
    ];
    for (let i = 0; i < APP_LIMIT; i += 1) {
      const res = await call(shop[i % 2]!, LIST, { baseUrl: TIGHT });
      assert.equal(res.status, 200, `request ${i + 1}: ${res.text}`);
    }
    assertThrottled(await call(shop[0]!, LIST, { baseUrl: TIGHT }), 'rate_limited', 'the app is spent');
    assertThrottled(await call(asEndUser(shop[1]!, 'someone-else'), LIST, { baseUrl: TIGHT }), 'rate_limited', 'another end user of the same app');
    assert.equal((await call({ name: 'unbound key', token: unbound.secret }, LIST, { baseUrl: TIGHT })).status, 200, 'a key of the same user outside the app');
  });

  it('caps live keys per user (MAX_KEYS_PER_USER): one more is 409 api_key_limit until one is revoked', async () => {
    const { caller } = await newProductUser('key minter');
    // The user holds one key already; two more fit.
    const made: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const res = await call(caller, `${ADMIN}/api-keys`, { body: { name: `extra ${i}`, access: 'full' }, baseUrl: TIGHT });
      assert.equal(res.status, 201, res.text);
      made.push(res.body.id);
    }
    const over = await call(caller, `${ADMIN}/api-keys`, { body: { name: 'one too many', access: 'full' }, baseUrl: TIGHT });
    assert.equal(over.status, 409, over.text);
    assert.equal(over.body.error.code, 'api_key_limit');
    assert.equal(over.body.error.details.limit, 3);
    assert.equal((await call(caller, `${ADMIN}/api-keys/${made[0]}`, { method: 'DELETE', baseUrl: TIGHT })).status, 200);
    const again = await call(caller, `${ADMIN}/api-keys`, { body: { name: 'after a revocation', access: 'full' }, baseUrl: TIGHT });
    assert.equal(again.status, 201, again.text);
  });

  it('caps concurrent streams per account (MAX_STREAMS_PER_ACCOUNT): a second key of the user finds the account full', async () => {
    const userId = randomUUID();
    const [one, two] = await Promise.all([createKey({ user_id: userId }), createKey({ user_id: userId })]);
    const first: Caller = { name: 'first key', token: one.secret };
    const second: Caller = { name: 'second key', token: two.secret };
    const session = await createSessionAs(first);
    const open: RawStream[] = [];
    try {
      // Three streams of the account, by both keys, on the replicas with room.
      open.push(await openRawStream(first, session.id, env.apiUrl), await openRawStream(first, session.id, env.apiUrl2), await openRawStream(second, session.id, env.apiUrl));
      assert.deepEqual(open.map((s) => s.status), [200, 200, 200]);
      // The second key holds one stream of its own, yet the account's three are all taken.
      const refused = await openRawStream(second, session.id, TIGHT);
      refused.close();
      assert.equal(refused.status, 429, refused.bodyText);
      assert.equal(JSON.parse(refused.bodyText).error.code, 'rate_limited');
      assert.ok(Number(refused.retryAfter) >= 1, 'Retry-After');
      // Another user's stream there is unaffected.
      const other = await newProductUser('other streamer');
      const theirs = await openRawStream(other.caller, (await createSessionAs(other.caller)).id, TIGHT);
      theirs.close();
      assert.equal(theirs.status, 200, theirs.bodyText);

      // Closing one of the first key's streams frees an account slot for the second key.
      open.shift()!.close();
      const reopened = await until(async () => {
        const attempt = await openRawStream(second, session.id, TIGHT);
        if (attempt.status === 200) return attempt;
        assert.equal(attempt.status, 429, attempt.bodyText);
        return undefined;
      });
      assert.ok(reopened, 'a stream opens once the account has a free slot');
      open.push(reopened);
    } finally {
      for (const stream of open) stream.close();
    }
  });

  it('caps streams per key, all its app end users together (max_streams 2): a third end user finds the key full', async () => {
    const { caller } = await newProductUser('app streamer', { app_id: 'tv', max_streams: 2 });
    const viewers = ['v1', 'v2', 'v3'].map((id) => asEndUser(caller, id));
    const sessions = await Promise.all(viewers.map((viewer) => createSessionAs(viewer)));
    const open: RawStream[] = [];
    try {
      open.push(await openRawStream(viewers[0]!, sessions[0].id, env.apiUrl), await openRawStream(viewers[1]!, sessions[1].id, env.apiUrl2));
      assert.deepEqual(open.map((s) => s.status), [200, 200]);
      const third = await openRawStream(viewers[2]!, sessions[2].id, env.apiUrl);
      third.close();
      assert.equal(third.status, 429, third.bodyText);
      assert.equal(JSON.parse(third.bodyText).error.code, 'rate_limited');
    } finally {
      for (const stream of open) stream.close();
    }
  });

  it('rate-limits new end users per app (NEW_END_USERS_PER_MINUTE); known end users keep working', async () => {
    const { caller } = await newProductUser('app owner', { app_id: 'crowd' });
    for (let i = 1; i <= 4; i += 1) {
      const res = await call(asEndUser(caller, `end-user-${i}`), LIST, { baseUrl: TIGHT });
      assert.equal(res.status, 200, `end user ${i}: ${res.text}`);
    }
    assertThrottled(await call(asEndUser(caller, 'end-user-5'), LIST, { baseUrl: TIGHT }), 'rate_limited', 'a fifth new end user');
    assert.equal((await call(asEndUser(caller, 'end-user-1'), LIST, { baseUrl: TIGHT })).status, 200, 'an end user that exists already');
  });

  it('throttles failed authentications per client address: 429 with Retry-After to bad credentials, valid ones keep working', async () => {
    const { caller } = await newProductUser('valid caller');
    const bad = (i: number): Caller => ({ name: `bad key ${i}`, token: `yuxi_${randomUUID().replace(/-/g, '')}${'x'.repeat(10)}` });
    for (let i = 0; i < 10; i += 1) {
      const res = await call(bad(i), LIST, { baseUrl: TIGHT });
      assert.equal(res.status, 401, `failure ${i + 1}: ${res.text}`);
    }
    assertThrottled(await call(bad(10), LIST, { baseUrl: TIGHT }), 'authentication_throttled', 'the 11th bad key');
    assertThrottled(await call({ name: 'bad token', token: await signToken({ secret: `not-${env.jwtSecret}` }) }, LIST, { baseUrl: TIGHT }), 'authentication_throttled', 'a badly signed token');
    assertThrottled(await call(null, LIST, { baseUrl: TIGHT }), 'authentication_throttled', 'no credentials at all');
    // Valid credentials from the same address keep working, a key and a token alike.
    assert.equal((await call(caller, LIST, { baseUrl: TIGHT })).status, 200);
    assert.equal((await call({ name: 'valid token', token: await signToken() }, LIST, { baseUrl: TIGHT })).status, 200);
  });

  it('takes the client address from the proxies TRUST_PROXY names: one client behind them is throttled, another is not', async () => {
    // The tight replica trusts loopback proxies (TRUST_PROXY=loopback): this test's requests come
    // through "a proxy" on 127.0.0.1 that names two clients from the documentation range.
    const { caller } = await newProductUser('behind a proxy');
    const from = (address: string) => ({ baseUrl: TIGHT, headers: { 'x-forwarded-for': address } });
    const bad = (i: number): Caller => ({ name: `bad key ${i}`, token: `yuxi_${randomUUID().replace(/-/g, '')}${'y'.repeat(10)}` });
    for (let i = 0; i < 10; i += 1) assert.equal((await call(bad(i), LIST, from('198.51.100.7'))).status, 401, `failure ${i + 1} of client A`);
    assertThrottled(await call(bad(10), LIST, from('198.51.100.7')), 'authentication_throttled', "client A's 11th bad key");
    // Another client behind the same proxy has failures of its own to spend.
    const other = await call(bad(11), LIST, from('198.51.100.8'));
    assert.equal(other.status, 401, `client B's first bad key: ${other.text}`);
    assert.equal(other.body.error.code, 'unauthorized');
    // And client A's valid key still works.
    assert.equal((await call(caller, LIST, from('198.51.100.7'))).status, 200);
  });
});
