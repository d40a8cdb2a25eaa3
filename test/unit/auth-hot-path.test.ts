import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AllowanceBook, CredentialCache, grantedPoints, leaseSize } from '#libs/auth';

interface Key {
  keyId: string;
  userId: string;
  expiresAt: Date | null;
}

const KEY_A: Key = { keyId: 'key-a', userId: 'user-1', expiresAt: null };
const KEY_B: Key = { keyId: 'key-b', userId: 'user-1', expiresAt: null };
const KEY_C: Key = { keyId: 'key-c', userId: 'user-2', expiresAt: null };

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

function liveCache(ttlMs = 10_000, max = 100) {
  const time = clock();
  const cache = new CredentialCache<Key>({ ttlMs, max, now: time.now });
  cache.connected();
  return { cache, time };
}

describe('credential cache: trusted only while invalidations can arrive', () => {
  it('serves a stored key until its TTL, then asks for a fresh read', () => {
    const { cache, time } = liveCache(10_000);
    assert.equal(cache.set('h-a', KEY_A, cache.begin()), true);
    time.advance(9_999);
    assert.equal(cache.get('h-a'), KEY_A);
    time.advance(1);
    assert.equal(cache.get('h-a'), null, 'the staleness bound: an entry is never used past the TTL');
  });

  it("never serves a key past the key's own expiry", () => {
    const { cache, time } = liveCache(10_000);
    const expiring = { ...KEY_A, expiresAt: new Date(time.now() + 500) };
    cache.set('h-a', expiring, cache.begin());
    assert.equal(cache.get('h-a'), expiring);
    time.advance(500);
    assert.equal(cache.get('h-a'), null);
  });

  it('a key invalidation drops that key only; a user invalidation drops all of the user\'s keys', () => {
    const { cache } = liveCache();
    for (const [hash, key] of [['h-a', KEY_A], ['h-b', KEY_B], ['h-c', KEY_C]] as const) cache.set(hash, key, cache.begin());
    cache.invalidate({ keyId: 'key-a' });
    assert.deepEqual([cache.get('h-a'), cache.get('h-b'), cache.get('h-c')], [null, KEY_B, KEY_C]);
    cache.invalidate({ userId: 'user-1' });
    assert.deepEqual([cache.get('h-b'), cache.get('h-c')], [null, KEY_C]);
  });

  it('a read that began before an invalidation is not stored after it (the revocation race)', () => {
    const { cache } = liveCache();
    const before = cache.begin();
    cache.invalidate({ keyId: 'some other key' });
    assert.equal(cache.set('h-a', KEY_A, before), false);
    assert.equal(cache.get('h-a'), null);
    assert.equal(cache.set('h-a', KEY_A, cache.begin()), true, 'a read begun after it is stored');
  });

  it('serves and stores nothing while the channel is down, and starts empty once subscribed again', () => {
    const { cache } = liveCache();
    cache.set('h-a', KEY_A, cache.begin());
    const during = cache.begin();
    cache.disconnected();
    assert.equal(cache.get('h-a'), null);
    assert.equal(cache.set('h-b', KEY_B, cache.begin()), false, 'nothing is stored while invalidations may be missed');
    cache.connected();
    assert.equal(cache.get('h-a'), null, 'what was held before the outage is gone');
    assert.equal(cache.set('h-b', KEY_B, during), false, 'a read begun before the outage is not stored after it');
    assert.equal(cache.set('h-b', KEY_B, cache.begin()), true);
    assert.equal(cache.get('h-b'), KEY_B);
  });

  it('is off before the first subscription, and with a TTL of 0', () => {
    const cold = new CredentialCache<Key>({ ttlMs: 10_000, max: 10 });
    assert.equal(cold.set('h-a', KEY_A, cold.begin()), false);
    assert.equal(cold.get('h-a'), null);
    const { cache } = liveCache(0);
    assert.equal(cache.set('h-a', KEY_A, cache.begin()), false);
  });

  it('starts over when full rather than growing', () => {
    const { cache } = liveCache(10_000, 2);
    cache.set('h-a', KEY_A, cache.begin());
    cache.set('h-b', KEY_B, cache.begin());
    cache.set('h-c', KEY_C, cache.begin());
    assert.equal(cache.size, 1);
    assert.equal(cache.get('h-c'), KEY_C);
  });
});

describe('rate-limit leases: never more than the limit per window', () => {
  it('leases 1 % of the limit, at least one point', () => {
    assert.deepEqual([leaseSize(6, 1), leaseSize(99, 1), leaseSize(1200, 1), leaseSize(100_000_000, 1), leaseSize(1200, 0), leaseSize(1200, 5)], [1, 1, 12, 1_000_000, 1, 60]);
  });

  it('grants the whole lease while the window has room, the rest of it at the edge, nothing once spent', () => {
    assert.equal(grantedPoints(100, 10, 10), 10);
    assert.equal(grantedPoints(100, 10, 100), 10);
    assert.equal(grantedPoints(100, 10, 104), 6);
    assert.equal(grantedPoints(100, 10, 110), 0);
    assert.equal(grantedPoints(100, 10, 250), 0);
  });

  it('two replicas leasing from one window admit exactly the limit between them, then refuse until it ends', () => {
    const limit = 50;
    const lease = 7;
    let counter = 0; // the shared Redis window
    const time = clock();
    const replicas = [new AllowanceBook(time.now), new AllowanceBook(time.now)];
    let admitted = 0;
    let leases = 0;
    for (let request = 0; request < 200; request += 1) {
      const book = replicas[request % 2]!;
      let decision = book.take('key');
      if (decision === null) {
        counter += lease;
        leases += 1;
        decision = book.record('key', grantedPoints(limit, lease, counter), 60_000 - 1_000);
      }
      if (decision.allowed) admitted += 1;
      time.advance(1);
    }
    assert.equal(admitted, limit, 'all replicas together: the limit exactly, here where neither holds points unspent at the end');
    assert.ok(leases < 200 / 2, `${leases} leases for 200 requests`);
  });

  it('refuses in a spent window without asking again, with the time left, and leases anew once it ends', () => {
    const time = clock();
    const book = new AllowanceBook(time.now);
    assert.deepEqual(book.record('key', 0, 30_000), { allowed: false, retryAfterMs: 30_000 });
    time.advance(10_000);
    assert.deepEqual(book.take('key'), { allowed: false, retryAfterMs: 20_000 });
    time.advance(20_000);
    assert.equal(book.take('key'), null, 'a new window: ask Redis');
  });

  it('spends a lease locally: the asking request takes one point, the next ones the rest, then a new lease is due', () => {
    const time = clock();
    const book = new AllowanceBook(time.now);
    assert.deepEqual(book.record('key', 3, 60_000), { allowed: true });
    assert.deepEqual([book.take('key'), book.take('key')], [{ allowed: true }, { allowed: true }]);
    assert.equal(book.take('key'), null, 'used up but not spent: lease again');
    assert.equal(book.take('other key'), null, 'buckets are separate');
  });

  it('adds the points of two leases of one window in flight at once, and spends what it holds when the second finds the window spent', () => {
    const time = clock();
    const book = new AllowanceBook(time.now);
    assert.deepEqual(book.record('key', 3, 60_000), { allowed: true });
    // The second lease was asked for at the same moment, answered later: its points join the first's.
    assert.deepEqual(book.record('key', 3, 60_000, time.now()), { allowed: true });
    const taken = [book.take('key'), book.take('key'), book.take('key'), book.take('key')];
    assert.deepEqual(taken, [{ allowed: true }, { allowed: true }, { allowed: true }, { allowed: true }]);
    assert.equal(book.take('key'), null, '2 + 2 points after the two asking requests, then a new lease is due');
    // A third lease finds the window spent while a fourth's points are still held: those are spent first.
    book.record('key', 2, 60_000);
    assert.deepEqual(book.record('key', 0, 60_000), { allowed: true });
    assert.equal(book.take('key'), null);
  });

  it('ends leased points when the window ends as Redis counts it: from when the lease was asked for', () => {
    const time = clock();
    const book = new AllowanceBook(time.now);
    const sentAt = time.now();
    time.advance(2_000); // the answer took two seconds
    book.record('key', 10, 5_000, sentAt);
    time.advance(3_000);
    assert.equal(book.take('key'), null, 'the window ended 5 s after the lease was asked for');
  });

  it('drops leased points when their window ends, even unspent (never carried into the next window)', () => {
    const time = clock();
    const book = new AllowanceBook(time.now);
    book.record('key', 10, 5_000);
    time.advance(5_000);
    assert.equal(book.take('key'), null);
  });
});
