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

  /** The caller's own bucket (its key, or its token user): null when allowed, else the seconds to wait. */
  async consumeCaller(caller: { keyId: string | null; actorId: string; limits: Principal['limits'] }): Promise<number | null> {
    return this.take(caller.keyId ? `key:${caller.keyId}` : `user:${caller.actorId}`, caller.limits.perMinute ?? this.config.rateLimitPerMinute);
  }

  /** An app end user's own bucket. */
  async consumeEndUser(principal: Principal): Promise<number | null> {
    return principal.appId === null ? null : this.take(`end-user:${principal.userId}`, this.config.endUserRateLimitPerMinute);
  }

  private async take(key: string, points: number): Promise<number | null> {
    if (points === 0) return null;
    // The limit is part of the bucket (and of its Redis key): a changed limit starts a fresh window.
    const bucket = `${points}:${key}`;
    for (let waits = 0; ; waits += 1) {
      const local = this.allowances.take(bucket);
      if (local) return retryAfterS(local);
      const pending = this.leasing.get(bucket);
      if (!pending || waits >= LEASE_WAITS) break;
      await pending;
    }
    const lease = this.lease(bucket, points);
    this.leasing.set(bucket, lease);
    try {
      return retryAfterS(await lease);
    } finally {
      if (this.leasing.get(bucket) === lease) this.leasing.delete(bucket);
    }
  }

  /** One round trip: adds a lease's points to the window's counter (starting the window if new) and reads its remaining time. */
  private async lease(bucket: string, points: number): Promise<Decision> {
    const wanted = leaseSize(points, this.config.rateLimitLeasePercent);
    try {
      const sentAt = Date.now();
      const [counter, windowLeftMs] = (await this.redis.eval(LEASE, 1, `yuxi:rl:${bucket}`, String(wanted), String(WINDOW_MS))) as [number, number];
      return this.allowances.record(bucket, grantedPoints(points, wanted, counter), windowLeftMs, sentAt);
    } catch (error) {
      this.log.warn(`rate limits are not enforced while Redis is unreachable: ${String(error)}`);
      return { allowed: true };
    }
  }

  /**
   * Takes one of the principal's concurrent-stream slots; false when all are taken. The slot is
   * kept alive by `refreshStreams` (every heartbeat) and given back by `releaseStream`.
   */
  async acquireStream(principal: Principal, streamId: string): Promise<boolean> {
    const cap = principal.limits.streams ?? this.config.maxStreamsPerPrincipal;
    if (cap === 0) return true;
    try {
      const taken = (await this.redis.eval(ACQUIRE, 1, slotsKey(principal), String(Date.now()), String(SLOT_TTL_MS), String(cap), streamId)) as number;
      return taken === 1;
    } catch (error) {
      this.log.warn(`stream caps are not enforced while Redis is unreachable: ${String(error)}`);
      return true;
    }
  }

  /**
   * Keeps many held slots alive at once (the SSE heartbeat of every open stream of a process): one
   * Redis call per principal and up to REFRESH_BATCH slots, instead of one per stream.
   */
  async refreshStreams(slots: Iterable<{ principal: Principal; slot: string }>): Promise<void> {
    const byKey = new Map<string, string[]>();
    for (const { principal, slot } of slots) {
      const key = slotsKey(principal);
      const ids = byKey.get(key);
      if (ids) ids.push(slot);
      else byKey.set(key, [slot]);
    }
    const calls: Promise<unknown>[] = [];
    for (const [key, ids] of byKey) {
      for (let at = 0; at < ids.length; at += REFRESH_BATCH) {
        calls.push(this.redis.eval(REFRESH_MANY, 1, key, String(Date.now()), String(SLOT_TTL_MS), ...ids.slice(at, at + REFRESH_BATCH)).catch(() => undefined));
      }
    }
    await Promise.all(calls);
  }

  async releaseStream(principal: Principal, streamId: string): Promise<void> {
    await this.redis.zrem(slotsKey(principal), streamId).catch(() => undefined);
  }
}

function retryAfterS(decision: Decision): number | null {
  return decision.allowed ? null : Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
}

/**
 * A window is a counter that expires a minute after its first point (the layout rate-limiter-flexible
 * used under the same keys, so replicas of the previous version count in the same windows).
 */
const LEASE = `
local counter = redis.call('INCRBY', KEYS[1], tonumber(ARGV[1]))
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
  left = tonumber(ARGV[2])
end
return {counter, left}`;

/** `refreshStreams`: slots per Redis call, so that one call stays short for Redis's single thread. */
const REFRESH_BATCH = 1000;

/** Keeps each held slot in ARGV[3..] (and the set holding them) alive; a slot no longer held is not added back (XX). */
const REFRESH_MANY = `
local expiry = tonumber(ARGV[1]) + tonumber(ARGV[2])
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', expiry, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1`;

function slotsKey(principal: Principal): string {
  return `yuxi:sse-slots:${principal.userId}`;
}

/** Drops expired slots, then takes one if fewer than the cap are held (score = expiry time). */
const ACQUIRE = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[4])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1`;
