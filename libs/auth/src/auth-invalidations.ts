import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { AppConfig, isCluster, type RedisClient, ThrottledLog } from '#libs/config';
import { AUTH_REDIS, AUTH_SUBSCRIBER } from './auth.redis.js';
import { CredentialCache, type InvalidationTarget } from './credential-cache.js';
import type { VerifiedKey } from './auth.service.js';

const CHANNEL = 'yuxi:auth:invalidations';
const CACHE_MAX = 10_000;

/** On the wire: an invalidation (`key` or `user`, with the id) under a nonce, or the acknowledgement of one. */
type Notice = { t: 'key' | 'user'; id: string; n: string } | { t: 'ack'; n: string };

/**
 * Keeps every api replica's cache of verified API keys true to Postgres without a Redis call per
 * request. A revocation or a role change (committed first) is published on one pub/sub channel;
 * each replica drops the credentials it names, then publishes an acknowledgement. The changing
 * request answers once as many replicas acknowledged as PUBLISH reached (or after
 * AUTH_INVALIDATION_WAIT_MS), so the next request, on any replica that was subscribed, is
 * refused (or carries the new role).
 *
 * A replica trusts its cache only while subscribed (`CredentialCache`): on a lost connection it
 * reads Postgres on every request until it has subscribed again, from an empty cache. What is
 * left, a notice lost on a connection that still looks alive or a replica too slow to acknowledge
 * in time, is bounded by AUTH_CACHE_TTL_MS, the longest an entry is used.
 */
@Injectable()
export class AuthInvalidations implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(AuthInvalidations.name);
  private readonly log = new ThrottledLog(this.logger);
  readonly cache: CredentialCache<VerifiedKey>;
  private readonly waiting = new Map<string, { acks: number; expected: number | null; done: () => void }>();
  private readonly listeners = new Set<(target: InvalidationTarget) => void>();

  constructor(
    @Inject(AUTH_REDIS) private readonly redis: RedisClient,
    @Inject(AUTH_SUBSCRIBER) private readonly subscriber: RedisClient,
    private readonly config: AppConfig,
  ) {
    this.cache = new CredentialCache({ ttlMs: config.authCacheTtlMs, max: CACHE_MAX });
  }

  onModuleInit(): void {
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === CHANNEL) this.received(message);
    });
    // Every (re)connection subscribes anew and only then trusts a cache, from empty.
    this.subscriber.on('ready', () => void this.subscribe());
    this.subscriber.on('close', () => this.cache.disconnected());
    // Not waited for: with Redis down the api starts, reading Postgres for every credential; ioredis keeps reconnecting.
    this.subscriber.connect().catch((error: unknown) => this.log.warn(`credential cache off until Redis is reachable: ${String(error)}`));
  }

  onApplicationShutdown(): void {
    this.subscriber.disconnect();
  }

  /**
   * Drops the credentials `target` names here and on every replica; resolves once every replica
   * subscribed when it was published confirmed it, or after AUTH_INVALIDATION_WAIT_MS. Never
   * throws: the change is committed already, and the cache's TTL bounds what a failure leaves.
   */
  async broadcast(target: InvalidationTarget): Promise<void> {
    this.cache.invalidate(target);
    this.notify(target);
    const nonce = randomUUID();
    const notice: Notice = 'keyId' in target ? { t: 'key', id: target.keyId, n: nonce } : { t: 'user', id: target.userId, n: nonce };
    let timer: NodeJS.Timeout | undefined;
    const waiter = { acks: 0, expected: null as number | null, done: () => undefined as void };
    const confirmed = new Promise<boolean>((resolve) => {
      waiter.done = () => resolve(true);
      timer = setTimeout(() => resolve(false), this.config.authInvalidationWaitMs);
    });
    this.waiting.set(nonce, waiter);
    try {
      const receivers = await this.redis.publish(CHANNEL, JSON.stringify(notice));
      // Acknowledgements reach this process through its own subscription: without one, none can be counted.
      if (!this.cache.isLive) {
        this.logger.warn(`invalidation published to ${receivers} replicas, unconfirmed (this replica is not subscribed): they drop it within ${this.config.authCacheTtlMs} ms at worst`);
        return;
      }
      // On a cluster PUBLISH counts the subscribers of the node that took it only (the message still
      // reaches every node's): there the wait is the whole AUTH_INVALIDATION_WAIT_MS, not a count.
      if (isCluster(this.redis)) {
        await confirmed;
        return;
      }
      waiter.expected = receivers;
      if (waiter.acks >= receivers) waiter.done();
      if (!(await confirmed)) {
        this.logger.warn(`${waiter.acks} of ${receivers} replicas confirmed an invalidation within ${this.config.authInvalidationWaitMs} ms; the others drop it within ${this.config.authCacheTtlMs} ms at worst`);
      }
    } catch (error) {
      this.logger.warn(`invalidation not published (other replicas drop it within ${this.config.authCacheTtlMs} ms at worst): ${String(error)}`);
    } finally {
      clearTimeout(timer);
      this.waiting.delete(nonce);
    }
  }

  private received(message: string): void {
    let notice: Notice;
    try {
      notice = JSON.parse(message) as Notice;
    } catch {
      return;
    }
    if (notice.t === 'ack') {
      const waiter = this.waiting.get(notice.n);
      if (!waiter) return;
      waiter.acks += 1;
      if (waiter.expected !== null && waiter.acks >= waiter.expected) waiter.done();
      return;
    }
    if (notice.t !== 'key' && notice.t !== 'user') return;
    const target: InvalidationTarget = notice.t === 'key' ? { keyId: notice.id } : { userId: notice.id };
    this.cache.invalidate(target);
    this.notify(target);
    // Dropped before acknowledged: the publisher answers its client only after this.
    this.redis.publish(CHANNEL, JSON.stringify({ t: 'ack', n: notice.n } satisfies Notice)).catch((error: unknown) => this.log.warn(`invalidation not acknowledged: ${String(error)}`));
  }

  /**
   * Called with every credential dropped here, on this replica's own changes and on every other
   * replica's notice (so possibly twice for one change): what this process holds on a credential
   * beyond a request (an open event stream) ends with it.
   */
  onInvalidated(listener: (target: InvalidationTarget) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(target: InvalidationTarget): void {
    for (const listener of this.listeners) {
      try {
        listener(target);
      } catch (error) {
        this.log.warn(`an invalidation listener failed: ${String(error)}`);
      }
    }
  }

  private async subscribe(): Promise<void> {
    try {
      await this.subscriber.subscribe(CHANNEL);
      // A connection lost while subscribing stays untrusted: its next 'ready' subscribes again.
      if (this.subscriber.status === 'ready') this.cache.connected();
    } catch (error) {
      // Until subscribed, nothing is served from the cache (every request reads Postgres).
      this.log.warn(`credential invalidations not subscribed: ${String(error)}`);
      setTimeout(() => {
        if (this.subscriber.status === 'ready' && !this.cache.isLive) void this.subscribe();
      }, 1_000).unref();
    }
  }
}
