import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { accountLimit, AuthService, clientOf, CredentialCache, generateKeySecret, RateLimits, UnknownKeys } from '#libs/auth';
import type { AppConfig, RedisClient } from '#libs/config';
import { accountLockThreshold, CLAIM_LOCK_MARGIN } from '#libs/engine';

/** A Redis that runs the rate limiter's lease script in memory, counting the calls made to it and the commands they run. */
function fakeRedis(): { redis: RedisClient; evals: number; commands: Record<string, number>; counters: Map<string, number> } {
  const counters = new Map<string, number>();
  const expiries = new Map<string, number>();
  const state = {
    evals: 0,
    commands: { incrby: 0, pttl: 0, pexpire: 0 } as Record<string, number>,
    counters,
    redis: {
      eval: async (script: string, keyCount: number, ...args: string[]) => {
        state.evals += 1;
        assert.match(script, /INCRBY/, 'only the lease script is expected here');
        const keys = args.slice(0, keyCount);
        const [window, ...rest] = args.slice(keyCount);
        return keys.flatMap((key, i) => {
          const wanted = Number(rest[2 * i]);
          const counter = (counters.get(key) ?? 0) + wanted;
          counters.set(key, counter);
          state.commands.incrby! += 1;
          if (counter === wanted) {
            state.commands.pexpire! += 1;
            expiries.set(key, Date.now() + Number(window));
            return [counter, Number(window)];
          }
          if (rest[2 * i + 1] === '1') {
            state.commands.pttl! += 1;
            return [counter, (expiries.get(key) ?? Date.now() + 30_000) - Date.now()];
          }
          return [counter, -1];
        });
      },
    } as unknown as RedisClient,
  };
  return state;
}

function limiter(settings: Partial<AppConfig>) {
  const fake = fakeRedis();
  const config = { rateLimitPerMinute: 1000, userRateLimitPerMinute: 1000, appRateLimitPerMinute: 1000, endUserRateLimitPerMinute: 1000, rateLimitLeasePercent: 0, ...settings } as AppConfig;
  return { limits: new RateLimits(fake.redis, config), fake };
}

const caller = (keyId: string, actorId = 'user-1', appId: string | null = null) => ({ keyId, actorId, appId, limits: { perMinute: null, streams: null } });

describe('fair shares: a user’s keys share one allowance', () => {
  it('leases each bucket once for concurrent requests, however many buckets a request has (no window spent on unspent leases)', async () => {
    const { limits, fake } = limiter({ rateLimitLeasePercent: 1, rateLimitPerMinute: 1200, userRateLimitPerMinute: 1200, appRateLimitPerMinute: 1200 });
    // Redis answers after a moment, so requests arrive while leases are under way (as 50 clients at once do).
    const answer = fake.redis.eval.bind(fake.redis) as (...args: unknown[]) => Promise<unknown>;
    (fake.redis as unknown as { eval: unknown }).eval = async (...args: unknown[]) => {
      await new Promise((resolve) => setTimeout(resolve, 2));
      return answer(...args);
    };
    // 40 at once: a request waits for at most LEASE_WAITS (4) leases under way before leasing itself.
    const decisions = await Promise.all(Array.from({ length: 40 }, () => limits.consumeCaller(caller('key-1', 'user-1', 'shop'))));
    assert.deepEqual(new Set(decisions), new Set([null]), 'every request is within the limits');
    // 40 requests need 4 leases of 12 points per bucket; requests leasing their own would lease up to
    // 40 × 12 points, and a burst of concurrent requests would spend the window on unspent leases.
    for (const [key, counter] of fake.counters) assert.ok(counter <= 48, `${key}: ${counter} points leased for 40 requests`);
  });


  it('refuses every key of a user once the user’s allowance is spent, however many keys it has', async () => {
    const { limits } = limiter({ userRateLimitPerMinute: 5 });
    const decisions: (number | null)[] = [];
    for (let i = 0; i < 5; i += 1) decisions.push(await limits.consumeCaller(caller(`key-${i}`)));
    assert.deepEqual(decisions, [null, null, null, null, null]);
    assert.ok((await limits.consumeCaller(caller('key-new'))) !== null, 'a sixth key is refused: the user is spent');
    assert.equal(await limits.consumeCaller(caller('key-0', 'user-2')), null, 'another user is not');
  });

  it('holds an app’s keys to the app’s allowance, apart from the user’s other keys', async () => {
    const { limits } = limiter({ appRateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i += 1) assert.equal(await limits.consumeCaller(caller(`shop-${i}`, 'user-1', 'shop')), null);
    assert.ok((await limits.consumeCaller(caller('shop-9', 'user-1', 'shop'))) !== null);
    assert.equal(await limits.consumeCaller(caller('plain', 'user-1')), null);
    assert.equal(await limits.consumeCaller(caller('blog-1', 'user-1', 'blog')), null, 'another app of the same user');
  });

  it('leases all of a request’s buckets in one Redis call, reading a window’s end only once (the cost per request stays that of one bucket)', async () => {
    const { limits, fake } = limiter({ rateLimitLeasePercent: 1, rateLimitPerMinute: 1200, userRateLimitPerMinute: 1200, appRateLimitPerMinute: 1200 });
    for (let i = 0; i < 120; i += 1) assert.equal(await limits.consumeCaller(caller('key-1', 'user-1', 'shop')), null);
    // 12 points a lease: 10 leases for 120 requests, each covering the key's, the user's and the app's bucket.
    assert.equal(fake.evals, 10);
    assert.equal(fake.counters.size, 3);
    for (const [key, counter] of fake.counters) {
      assert.equal(counter, 120, key);
      assert.match(key, /^yuxi:rl:\{user-1\}:/, 'one Redis Cluster slot for all of a request’s buckets');
    }
    // One INCRBY per bucket and lease; each window's end is set once and then known here: never read.
    assert.deepEqual(fake.commands, { incrby: 30, pttl: 0, pexpire: 3 });
  });

  it('reads the end of a window it did not start (another replica did)', async () => {
    const { limits, fake } = limiter({ rateLimitLeasePercent: 1, rateLimitPerMinute: 1200, userRateLimitPerMinute: 0 });
    fake.counters.set('yuxi:rl:{user-1}:1200:key:key-1', 100);
    assert.equal(await limits.consumeCaller(caller('key-1')), null);
    assert.deepEqual(fake.commands, { incrby: 1, pttl: 1, pexpire: 0 });
  });

  it('lets a key an administrator raised keep its own limit above its user’s; 0 stays "no limit"', () => {
    assert.equal(accountLimit(1200, null, 1200), 1200);
    assert.equal(accountLimit(1200, 5000, 1200), 5000, 'above the per-key limit: an administrator set it');
    assert.equal(accountLimit(1200, 10, 1200), 1200);
    assert.equal(accountLimit(0, 5000, 1200), 0);
  });

  it('gives every key a user may make one account bucket: keys with other limits do not multiply the user’s allowance', async () => {
    // USER_RATE_LIMIT_PER_MINUTE below the per-key limit: a user may give keys any limit up to 1200.
    assert.equal(accountLimit(600, 900, 1200), 600);
    assert.equal(accountLimit(600, 1200, 1200), 600);
    // No per-key limit at all (0): a key's own limit may be anything, and raises nothing.
    assert.equal(accountLimit(600, 1_000_000, 0), 600);
    const { limits } = limiter({ rateLimitPerMinute: 1200, userRateLimitPerMinute: 4 });
    const withLimit = (keyId: string, perMinute: number) => ({ ...caller(keyId), limits: { perMinute, streams: null } });
    const decisions: (number | null)[] = [];
    for (const [i, perMinute] of [900, 901, 902, 903, 904, 905].entries()) decisions.push(await limits.consumeCaller(withLimit(`key-${i}`, perMinute)));
    assert.deepEqual(decisions.map((d) => d === null), [true, true, true, true, false, false], 'four requests for the user, whatever limits its keys carry');
  });

  it('counts failed authentications per client: an IPv4 address, an IPv6 /64 (one subscriber’s block)', async () => {
    assert.equal(clientOf('203.0.113.7'), '203.0.113.7');
    assert.equal(clientOf('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(clientOf('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(clientOf('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
    assert.equal(clientOf('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientOf('::1'), '0:0:0:0::/64');
    assert.notEqual(clientOf('2001:db8:1:3::1'), clientOf('2001:db8:1:2::1'));
    const { limits } = limiter({ authFailureLimitPerMinute: 2 });
    assert.deepEqual([await limits.consumeAuthFailure('2001:db8:1:2::1'), await limits.consumeAuthFailure('2001:db8:1:2::2')], [null, null]);
    assert.ok((await limits.consumeAuthFailure('2001:db8:1:2:9:9:9:9')) !== null, 'another address of the same /64 is the same client');
    assert.equal(await limits.consumeAuthFailure('2001:db8:1:3::1'), null, 'another /64 is another client');
  });

  it('counts failed authentications per address, apart from any caller', async () => {
    const { limits } = limiter({ authFailureLimitPerMinute: 2 });
    assert.deepEqual([await limits.consumeAuthFailure('10.0.0.1'), await limits.consumeAuthFailure('10.0.0.1')], [null, null]);
    assert.ok((await limits.consumeAuthFailure('10.0.0.1')) !== null);
    assert.equal(await limits.consumeAuthFailure('10.0.0.2'), null);
  });
});

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

describe('the negative cache of key verification', () => {
  it('remembers an unknown key for the TTL, then forgets it', () => {
    const time = clock();
    const unknown = new UnknownKeys({ ttlMs: 1_000, max: 10, now: time.now });
    unknown.add('h1');
    time.advance(999);
    assert.equal(unknown.has('h1'), true);
    time.advance(1);
    assert.equal(unknown.has('h1'), false);
    assert.equal(unknown.size, 0);
  });

  it('is bounded: the least recently seen goes first', () => {
    const unknown = new UnknownKeys({ ttlMs: 60_000, max: 2 });
    unknown.add('h1');
    unknown.add('h2');
    assert.equal(unknown.has('h1'), true); // h1 is now the most recently seen
    unknown.add('h3');
    assert.equal(unknown.size, 2);
    assert.deepEqual([unknown.has('h1'), unknown.has('h2'), unknown.has('h3')], [true, false, true]);
    for (let i = 0; i < 1000; i += 1) unknown.add(`flood-${i}`);
    assert.equal(unknown.size, 2);
  });

  it('looks an unknown key up in Postgres once per TTL, however often it is sent', async () => {
    let queries = 0;
    const keys = { query: async () => (queries += 1, []) };
    const cache = new CredentialCache({ ttlMs: 10_000, max: 100 });
    cache.connected();
    const config = { apiKeyHashSecret: 'x'.repeat(32), authCacheTtlMs: 10_000, authNegativeCacheMax: 100 } as AppConfig;
    const auth = new AuthService(keys as never, {} as never, { cache } as never, config);
    const secret = generateKeySecret();
    for (let i = 0; i < 50; i += 1) assert.equal(await auth.verifyKey(secret), null);
    assert.equal(queries, 1);
    assert.equal(await auth.verifyKey(generateKeySecret()), null);
    assert.equal(queries, 2, 'another unknown key is looked up');
  });
});

describe('fair shares: the running-turn cap serialises claims only where it binds', () => {
  it('locks an account’s claims from CLAIM_LOCK_MARGIN turns below its cap (always, for a cap within the margin)', () => {
    assert.equal(CLAIM_LOCK_MARGIN, 64);
    assert.equal(accountLockThreshold(200), 136, 'the default cap: claims in parallel until 136 turns run');
    assert.equal(accountLockThreshold(64), 0);
    assert.equal(accountLockThreshold(6), 0, 'a small cap is strict from the first turn');
  });
});
