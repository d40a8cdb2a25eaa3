import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppConfig, type RedisClient, ThrottledLog } from '#libs/config';
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
   * kept alive by `refreshStream` (every heartbeat) and given back by `releaseStream`.
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

  async refreshStream(principal: Principal, streamId: string): Promise<void> {
    await this.redis.eval(REFRESH, 1, slotsKey(principal), String(Date.now()), String(SLOT_TTL_MS), streamId).catch(() => undefined);
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

/** Keeps a held slot (and the set holding it) alive. */
const REFRESH = `
if redis.call('ZADD', KEYS[1], 'XX', 'CH', tonumber(ARGV[1]) + tonumber(ARGV[2]), ARGV[3]) >= 0 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
end
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
