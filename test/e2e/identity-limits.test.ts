import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { bootstrap, call, type Caller, createKey, createSessionAs, newProductUser, openRawStream, type RawStream, signToken, unsignedToken, until } from '../support/identity.js';

// Over the test stack's BODY_LIMIT (12mb).
const BIG_BODY = JSON.stringify({ agent_id: 'default-chatbot', input: 'x'.repeat(13 * 1024 * 1024) });

describe('identity: user tokens, rate limits, stream caps', () => {
  it('accepts a valid HS256 user token and scopes its sessions to its subject', async () => {
    const subject = `alice-${randomUUID()}`;
    const alice: Caller = { name: 'alice (jwt)', token: await signToken({ subject }) };
    const mallory: Caller = { name: 'mallory (jwt)', token: await signToken() };

    const agents = await call(alice, API);
    assert.equal(agents.status, 200, agents.text);
    const session = await createSessionAs(alice);
    assert.equal((await call(alice, `${API}/sessions/${session.id}`)).status, 200);
    // Another token of the same subject is the same user.
    const again: Caller = { name: 'alice, new token', token: await signToken({ subject }) };
    assert.equal((await call(again, `${API}/sessions/${session.id}`)).status, 200, 'the same subject is the same principal');

    const foreign = await call(mallory, `${API}/sessions/${session.id}`);
    assert.equal(foreign.status, 404, foreign.text);
    assert.equal(foreign.body.error.code, 'not_found');
    const theirs = await call(mallory, `${API}/sessions?limit=100`);
    assert.equal(theirs.status, 200);
    assert.ok(!theirs.body.data.some((s: any) => s.id === session.id));
    assert.equal((await call(bootstrap, `${API}/sessions/${session.id}`)).status, 404, 'not even the administrator reads it through the public API');
  });

  it('refuses expired, foreign-issuer, foreign-audience, unsigned and wrongly signed tokens (401)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const tokens: Record<string, string> = {
      expired: await signToken({ expiresAt: now - 3600 }),
      'wrong issuer': await signToken({ issuer: 'https://evil.test' }),
      'wrong audience': await signToken({ audience: 'someone-else' }),
      'alg none': unsignedToken(),
      'another secret': await signToken({ secret: `not-${env.jwtSecret}` }),
    };
    for (const [name, token] of Object.entries(tokens)) {
      for (const baseUrl of [env.apiUrl, env.apiUrl2]) {
        const res = await call({ name, token }, API, { baseUrl });
        assert.equal(res.status, 401, `${name} on ${baseUrl}: ${res.text}`);
        assert.equal(res.body.error.code, 'unauthorized', name);
      }
    }
    // The control: the same helper with nothing wrong is accepted.
    assert.equal((await call({ name: 'valid', token: await signToken() }, API)).status, 200);
  });

  it('shares one key’s rate limit across both replicas: the 7th request of 6 per minute is 429 with Retry-After', async () => {
    const userId = randomUUID();
    const limited = await createKey({ user_id: userId, rate_limit_per_minute: 6 });
    const sibling = await createKey({ user_id: userId });
    const caller: Caller = { name: 'limited key', token: limited.secret };
    const replicas = [env.apiUrl, env.apiUrl2];
    for (let i = 0; i < 6; i += 1) {
      const res = await call(caller, `${API}/sessions`, { baseUrl: replicas[i % 2] });
      assert.equal(res.status, 200, `request ${i + 1} on ${replicas[i % 2]}: ${res.text}`);
    }
    const seventh = await call(caller, `${API}/sessions`, { baseUrl: replicas[0] });
    assert.equal(seventh.status, 429, seventh.text);
    assert.equal(seventh.body.error.code, 'rate_limited');
    const retryAfter = Number(seventh.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${seventh.headers.get('retry-after')}`);
    for (const baseUrl of [env.apiUrl2, env.apiUrl]) {
      const res = await call(caller, `${API}/sessions`, { baseUrl });
      assert.equal(res.status, 429, `refused on ${baseUrl} too`);
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
    }
    // Throttled before its body is read: a body over the limit is 429, not 413.
    const big = await call(caller, `${API}/sessions`, { rawBody: BIG_BODY, idempotencyKey: newKey() });
    assert.equal(big.status, 429);
    // The limit is the key's own: another key of the same user is unaffected.
    assert.equal((await call({ name: 'sibling key', token: sibling.secret }, `${API}/sessions`)).status, 200);
  });

  it('caps concurrent streams per principal across replicas (max_streams 2): the third is 429 before any SSE header', async () => {
    const { caller } = await newProductUser('streamer', { max_streams: 2 });
    const session = await createSessionAs(caller);
    const open: RawStream[] = [];
    try {
      open.push(await openRawStream(caller, session.id, env.apiUrl));
      open.push(await openRawStream(caller, session.id, env.apiUrl2));
      assert.deepEqual(open.map((s) => [s.status, s.contentType.split(';')[0]]), [
        [200, 'text/event-stream'],
        [200, 'text/event-stream'],
      ]);
      for (const baseUrl of [env.apiUrl, env.apiUrl2]) {
        const third = await openRawStream(caller, session.id, baseUrl);
        third.close();
        assert.equal(third.status, 429, `third stream on ${baseUrl}: ${third.bodyText}`);
        assert.match(third.contentType, /^application\/json/);
        assert.equal(JSON.parse(third.bodyText).error.code, 'rate_limited');
        assert.ok(Number(third.retryAfter) >= 1, 'Retry-After');
      }

      // Closing one frees its slot once the server sees the close.
      open.shift()!.close();
      const reopened = await until(async () => {
        const attempt = await openRawStream(caller, session.id, env.apiUrl2);
        if (attempt.status === 200) return attempt;
        assert.equal(attempt.status, 429, attempt.bodyText);
        return undefined;
      });
      assert.ok(reopened, 'a new stream opens after one was closed');
      open.push(reopened);
      const overAgain = await openRawStream(caller, session.id, env.apiUrl);
      overAgain.close();
      assert.equal(overAgain.status, 429, 'the cap still holds with two open');
    } finally {
      for (const stream of open) stream.close();
    }
  });

  it('authenticates before reading the body: an unauthenticated 13 MB body is 401, not 413', async () => {
    const anonymous = await call(null, `${API}/sessions`, { rawBody: BIG_BODY, idempotencyKey: newKey() });
    assert.equal(anonymous.status, 401, anonymous.text);
    assert.equal(anonymous.body.error.code, 'unauthorized');
    const badKey = await call({ name: 'unknown key', token: `yuxi_${'0'.repeat(42)}` }, `${API}/sessions`, { rawBody: BIG_BODY, idempotencyKey: newKey() });
    assert.equal(badKey.status, 401, badKey.text);
    // The control: the same body with a valid key is parsed, and is too large.
    const valid = await call(bootstrap, `${API}/sessions`, { rawBody: BIG_BODY, idempotencyKey: newKey() });
    assert.equal(valid.status, 413, valid.text);
    assert.equal(valid.body.error.code, 'payload_too_large');
  });
});
