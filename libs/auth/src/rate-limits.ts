import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppConfig, ThrottledLog } from '#libs/config';
import { AUTH_REDIS } from './auth.redis.js';
import type { Principal } from './principal.js';

const WINDOW_S = 60;
// An SSE slot not refreshed for this long (its api replica died) is free again.
const SLOT_TTL_MS = 90_000;

/**
 * Request rate limits per key (or per token user) and per app end user, and a cap on concurrent
 * SSE streams per principal — all in Redis, so they hold across api replicas. With Redis
 * unreachable the limits are not enforced (logged once per interval): refusing every request
 * would turn a cache outage into an API outage.
 */
@Injectable()
export class RateLimits implements OnApplicationShutdown {
  private readonly log = new ThrottledLog(new Logger(RateLimits.name));
  private readonly limiters = new Map<string, RateLimiterRedis>();

  constructor(
    @Inject(AUTH_REDIS) private readonly redis: Redis,
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
    try {
      await this.limiter(points).consume(key, 1);
      return null;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) return Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      this.log.warn(`rate limits are not enforced while Redis is unreachable: ${String(rejection)}`);
      return null;
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

  private limiter(points: number): RateLimiterRedis {
    let limiter = this.limiters.get(String(points));
    if (!limiter) {
      limiter = new RateLimiterRedis({ storeClient: this.redis, keyPrefix: `yuxi:rl:${points}`, points, duration: WINDOW_S });
      this.limiters.set(String(points), limiter);
    }
    return limiter;
  }
}

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
