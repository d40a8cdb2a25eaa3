import { isIP } from 'node:net';
import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { AppConfig, type RedisClient, ThrottledLog } from '#libs/config';
import { AUTH_REDIS } from './auth.redis.js';
import type { Principal } from './principal.js';
import { AllowanceBook, type Decision, grantedPoints, leaseSize } from './rate-allowance.js';

const WINDOW_MS = 60_000;
/** Requests that find a lease under way wait for it and look again, this many times, before asking Redis themselves. */
const LEASE_WAITS = 4;
// An SSE slot not refreshed for this long (its api replica died) is free again.
const SLOT_TTL_MS = 90_000;

/**
 * Request rate limits per key (or per token user) and per app end user, and a cap on concurrent
 * SSE streams per principal — counted in Redis, so they hold across api replicas. Request limits
 * are fixed one-minute windows whose points each replica leases in batches (`rate-allowance.ts`:
 * never more than the limit per window, a key may be refused up to (replicas − 1) leases early),
 * so most requests make no Redis call. With Redis unreachable the limits are not enforced (logged
 * once per interval): refusing every request would turn a cache outage into an API outage.
 */
@Injectable()
export class RateLimits implements OnApplicationShutdown {
  private readonly log = new ThrottledLog(new Logger(RateLimits.name));
  private readonly allowances = new AllowanceBook();
  /** The lease under way per bucket: concurrent requests wait for it instead of asking Redis each. */
  private readonly leasing = new Map<string, Promise<unknown>>();

  constructor(
    @Inject(AUTH_REDIS) private readonly redis: RedisClient,
    private readonly config: AppConfig,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    // The connection is shared with ApiKeys (revocation notices); it is this module's to close.
    this.redis.disconnect();
  }

  /**
   * The caller's buckets, consumed together: its own (its key, or its token user), its product
   * user's (every key and token of theirs together: minting keys buys no allowance) and, for an
   * app-bound key, its app's. Null when allowed, else the seconds to wait.
   */
  async consumeCaller(caller: Caller): Promise<number | null> {
    const own = caller.limits.perMinute ?? this.config.rateLimitPerMinute;
    const buckets: Bucket[] = [
      { name: caller.keyId ? `key:${caller.keyId}` : `user:${caller.actorId}`, points: own },
      // A key an administrator raised above the deployment's limits is not held back by its user's.
      { name: `account:${caller.actorId}`, points: accountLimit(this.config.userRateLimitPerMinute, caller.limits.perMinute, this.config.rateLimitPerMinute) },
    ];
    if (caller.appId) buckets.push({ name: `app:${caller.actorId}:${caller.appId}`, points: this.config.appRateLimitPerMinute });
    return this.takeAll(caller.actorId, buckets);
  }

  /** An app end user's own bucket. */
  async consumeEndUser(principal: Principal): Promise<number | null> {
    return principal.appId === null ? null : this.takeAll(principal.actorId, [{ name: `end-user:${principal.userId}`, points: this.config.endUserRateLimitPerMinute }]);
  }

  /** One more new end user of an app (checked before it is created): null when allowed, else the seconds to wait. */
  async consumeNewEndUser(actorId: string, appId: string): Promise<number | null> {
    return this.takeAll(actorId, [{ name: `new-end-users:${actorId}:${appId}`, points: this.config.newEndUsersPerMinute }]);
  }

  /**
   * One failed authentication from a client address: null while the address has failures left
   * this minute, else the seconds until it may fail again. Only failures are counted, so valid
   * credentials from a throttled address keep working.
   */
  async consumeAuthFailure(address: string): Promise<number | null> {
    const client = clientOf(address);
    return this.takeAll(`ip:${client}`, [{ name: `auth-failures:${client}`, points: this.config.authFailureLimitPerMinute }]);
  }

  /**
   * Takes one point from each bucket: from this replica's allowances where it holds them, and the
   * buckets it does not hold points of are leased in one Redis call (one script over all of them,
   * so the Redis cost per request stays that of one bucket). `tag` puts all of a request's buckets
   * in one Redis Cluster slot, which a script over several keys needs.
   */
  private async takeAll(tag: string, all: Bucket[]): Promise<number | null> {
    const buckets = all.filter((bucket) => bucket.points > 0);
    let refusedMs = 0;
    const needed: Bucket[] = [];
    // This request's lease, announced for a bucket the moment it is found needed (before this
    // request awaits another bucket's lease): concurrent requests then wait for it instead of each
    // leasing the same bucket, which would lease far more of its window than is spent.
    let announced!: () => void;
    const mine = new Promise<void>((resolve) => (announced = resolve));
    for (const bucket of buckets) {
      // The limit is part of the bucket (and of its Redis key): a changed limit starts a fresh window.
      const id = `{${tag}}:${bucket.points}:${bucket.name}`;
      for (let waits = 0; ; waits += 1) {
        const local = this.allowances.take(id);
        if (local) {
          if (!local.allowed) refusedMs = Math.max(refusedMs, local.retryAfterMs);
          break;
        }
        const pending = this.leasing.get(id);
        if (!pending || waits >= LEASE_WAITS) {
          needed.push({ name: id, points: bucket.points });
          this.leasing.set(id, mine);
          break;
        }
        await pending;
      }
    }
    try {
      // A bucket that refuses decides: nothing more is leased for a request that is refused anyway.
      if (refusedMs > 0) return retryAfterS({ allowed: false, retryAfterMs: refusedMs });
      if (needed.length === 0) return null;
      return retryAfterS(await this.lease(needed));
    } finally {
      for (const bucket of needed) if (this.leasing.get(bucket.name) === mine) this.leasing.delete(bucket.name);
      announced();
    }
  }

  /**
   * One round trip for all the buckets: adds each lease's points to its window's counter (starting
   * the window if new) and reads its remaining time. Refused when any bucket's window is spent.
   */
  private async lease(buckets: Bucket[]): Promise<Decision> {
    const wanted = buckets.map((bucket) => leaseSize(bucket.points, this.config.rateLimitLeasePercent));
    // A window this replica has leased from before and that has not ended: its end is known here,
    // so the script does not read it again (one command per bucket, not two, on most leases).
    const known = buckets.map((bucket) => this.allowances.windowEnd(bucket.name));
    try {
      const sentAt = Date.now();
      const args = buckets.flatMap((_, i) => [String(wanted[i]), known[i] === null ? '1' : '0']);
      const answer = (await this.redis.eval(LEASE, buckets.length, ...buckets.map((bucket) => `yuxi:rl:${bucket.name}`), String(WINDOW_MS), ...args)) as number[];
      let decision: Decision = { allowed: true };
      buckets.forEach((bucket, i) => {
        const granted = grantedPoints(bucket.points, wanted[i]!, answer[2 * i]!);
        const read = answer[2 * i + 1]!;
        const windowLeftMs = read >= 0 ? read : Math.max(1, known[i]! - sentAt);
        const one = this.allowances.record(bucket.name, granted, windowLeftMs, sentAt);
        if (!one.allowed && (decision.allowed || one.retryAfterMs > decision.retryAfterMs)) decision = one;
      });
      return decision;
    } catch (error) {
      this.log.warn(`rate limits are not enforced while Redis is unreachable: ${String(error)}`);
      return { allowed: true };
    }
  }

  /**
   * Takes one concurrent-stream slot of the caller's key (or token user; its cap is the key's
   * `max_streams`, else MAX_STREAMS_PER_PRINCIPAL) and one of its account (the product user: all
   * their keys, tokens and app end users together, MAX_STREAMS_PER_ACCOUNT), both or neither;
   * false when either is full. The slot is kept alive by `refreshStreams` (every heartbeat) and
   * given back by `releaseStream`.
   */
  async acquireStream(principal: Principal, streamId: string): Promise<boolean> {
    const keyCap = principal.limits.streams ?? this.config.maxStreamsPerPrincipal;
    const accountCap = accountLimit(this.config.maxStreamsPerAccount, principal.limits.streams, this.config.maxStreamsPerPrincipal);
    const [keySlots, accountSlots] = slotsKeys(principal);
    try {
      const taken = (await this.redis.eval(ACQUIRE, 2, keySlots, accountSlots, String(Date.now()), String(SLOT_TTL_MS), String(keyCap), String(accountCap), streamId)) as number;
      return taken === 1;
    } catch (error) {
      this.log.warn(`stream caps are not enforced while Redis is unreachable: ${String(error)}`);
      return true;
    }
  }

  /**
   * Keeps many held slots alive at once (the SSE heartbeat of every open stream of a process): one
   * Redis call per key (its slots and its account's) and up to REFRESH_BATCH slots, instead of one per stream.
   */
  async refreshStreams(slots: Iterable<{ principal: Principal; slot: string }>): Promise<void> {
    const byKey = new Map<string, { keys: [string, string]; ids: string[] }>();
    for (const { principal, slot } of slots) {
      const keys = slotsKeys(principal);
      const held = byKey.get(keys[0]);
      if (held) held.ids.push(slot);
      else byKey.set(keys[0], { keys, ids: [slot] });
    }
    const calls: Promise<unknown>[] = [];
    for (const { keys, ids } of byKey.values()) {
      for (let at = 0; at < ids.length; at += REFRESH_BATCH) {
        calls.push(this.redis.eval(REFRESH_MANY, 2, ...keys, String(Date.now()), String(SLOT_TTL_MS), ...ids.slice(at, at + REFRESH_BATCH)).catch(() => undefined));
      }
    }
    await Promise.all(calls);
  }

  async releaseStream(principal: Principal, streamId: string): Promise<void> {
    await this.redis.eval(RELEASE, 2, ...slotsKeys(principal), streamId).catch(() => undefined);
  }
}

function retryAfterS(decision: Decision): number | null {
  return decision.allowed ? null : Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
}

/**
 * A window is a counter that expires a minute after its first point (the layout rate-limiter-flexible
 * used). A request's buckets are leased together: KEYS are their counters, ARGV[1] the window, and
 * for KEYS[i] ARGV[2i] the points wanted and ARGV[2i+1] whether to read the window's remaining time
 * ('1'; '0' when the caller knows it from an earlier lease of the same window). The answer is each
 * counter and its remaining time (-1: not read). A counter equal to the points just added is a
 * window that starts now.
 */
const LEASE = `
local window = tonumber(ARGV[1])
local answer = {}
for i = 1, #KEYS do
  local wanted = tonumber(ARGV[2 * i])
  local counter = redis.call('INCRBY', KEYS[i], wanted)
  local left = -1
  if counter == wanted then
    redis.call('PEXPIRE', KEYS[i], window)
    left = window
  elseif ARGV[2 * i + 1] == '1' then
    left = redis.call('PTTL', KEYS[i])
    if left < 0 then
      redis.call('PEXPIRE', KEYS[i], window)
      left = window
    end
  end
  answer[2 * i - 1] = counter
  answer[2 * i] = left
end
return answer`;

interface Bucket {
  name: string;
  /** The limit per window; 0: not limited. */
  points: number;
}

/** Who is calling, as far as the request limits care (before any end user is resolved). */
export interface Caller {
  keyId: string | null;
  actorId: string;
  appId: string | null;
  limits: Principal['limits'];
}

/**
 * A user's allowance (its account bucket), whatever limits their keys carry, so that keys with
 * different limits never get buckets of their own: only a key raised above the deployment's
 * per-key limit (`keyCeiling`), which only an administrator may set, is not held back by its
 * user's. With no per-key limit (0) a key's own limit may be anything: it raises nothing then.
 * 0 stays "no limit".
 */
export function accountLimit(userLimit: number, keyLimit: number | null, keyCeiling: number): number {
  if (userLimit === 0) return 0;
  const raisedByAdministrator = keyLimit !== null && keyCeiling > 0 && keyLimit > keyCeiling;
  return raisedByAdministrator ? Math.max(userLimit, keyLimit) : userLimit;
}

/** `refreshStreams`: slots per Redis call, so that one call stays short for Redis's single thread. */
const REFRESH_BATCH = 1000;

/**
 * Keeps each held slot in ARGV[3..] (in both sets, and the sets) alive; a slot no longer held is
 * not added back (XX). One ZADD per set for all the slots (REFRESH_BATCH keeps unpack's arguments
 * well under Lua's stack limit).
 */
const REFRESH_MANY = `
local expiry = tonumber(ARGV[1]) + tonumber(ARGV[2])
local members = {}
for i = 3, #ARGV do
  members[#members + 1] = expiry
  members[#members + 1] = ARGV[i]
end
for k = 1, 2 do
  redis.call('ZADD', KEYS[k], 'XX', unpack(members))
  redis.call('PEXPIRE', KEYS[k], tonumber(ARGV[2]))
end
return 1`;

/**
 * The slot sets of a stream: its key's (a token user's own for a JWT) and its account's. Both
 * are tagged with the product user, so one script may touch both in a Redis Cluster.
 */
function slotsKeys(principal: Principal): [string, string] {
  const tag = `{${principal.actorId}}`;
  return [`yuxi:sse-slots:${tag}:${principal.keyId ? `key:${principal.keyId}` : 'token'}`, `yuxi:sse-slots:${tag}:account`];
}

/**
 * Drops expired slots, then takes one in both sets if each holds fewer than its cap (ARGV[3] for
 * KEYS[1], ARGV[4] for KEYS[2]; 0: no cap) (score = expiry time).
 */
const ACQUIRE = `
local expiry = tonumber(ARGV[1]) + tonumber(ARGV[2])
for k = 1, 2 do
  redis.call('ZREMRANGEBYSCORE', KEYS[k], '-inf', ARGV[1])
  local cap = tonumber(ARGV[2 + k])
  if cap > 0 and redis.call('ZCARD', KEYS[k]) >= cap then return 0 end
end
for k = 1, 2 do
  redis.call('ZADD', KEYS[k], expiry, ARGV[5])
  redis.call('PEXPIRE', KEYS[k], tonumber(ARGV[2]))
end
return 1`;

const RELEASE = `
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1`;

/**
 * The client a failed authentication is counted against: an IPv4 address (an IPv4-mapped IPv6
 * one included) as is, an IPv6 address by its /64, the block one subscriber is given (a client
 * rotating through its own /64 is still one client). Anything else as it came.
 */
export function clientOf(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIP(address) !== 6) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = address.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const groups = address.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((group) => Number.parseInt(group || '0', 16).toString(16)).join(':')}::/64`;
}
