import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { AppConfig, countExisting, type RedisClient } from '#libs/config';
import { newId } from '#libs/database';
import { AUTH_REDIS } from './auth.redis.js';
import { ApiKeyEntity, UserEntity } from './entities.js';
import type { Role } from './principal.js';
import { generateKeySecret, isWellFormedKey, KEY_PREFIX, keyedHash, LOOKUP_LENGTH } from './key-format.js';

const MIN_KEY_LENGTH = 20;
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 10_000;
const LAST_USED_EVERY_MS = 60_000;
/** Outlives every cached entry of a revoked key; after it, caches have re-read the key from Postgres. */
const REVOKED_MARKER_MS = CACHE_TTL_MS * 2;
const revokedMarker = (keyId: string): string => `yuxi:auth:revoked:${keyId}`;
/** Set when a user's role changed: their keys' cached entries are re-read (same lifetime as a revocation's). */
const userChangedMarker = (userId: string): string => `yuxi:auth:user-changed:${userId}`;

/** A verified API key, before any end user is resolved. */
export interface VerifiedKey {
  keyId: string;
  userId: string;
  role: Role | null;
  access: 'full' | 'agents';
  appId: string | null;
  expiresAt: Date | null;
  limits: { perMinute: number | null; streams: number | null };
}

/**
 * API keys: found by their first characters, compared by a keyed hash (HMAC with the server's
 * API_KEY_HASH_SECRET) in constant time. Verified keys are cached briefly so the hot path pays no
 * query per request; a cached key is used only while Redis holds no revocation marker for it, and
 * the marker is set before a revocation answers — so the next request fails on every replica. A
 * role change marks the key's user the same way (one EXISTS covers both markers), so the owner's
 * next request on any replica carries the new role.
 */
@Injectable()
export class AuthService {
  private readonly logger = new Logger(AuthService.name);
  private readonly cache = new Map<string, { key: VerifiedKey; expiresAt: number }>();
  private readonly lastUsedWritten = new Map<string, number>();

  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    @Inject(AUTH_REDIS) private readonly redis: RedisClient,
    private readonly config: AppConfig,
  ) {}

  /** The api refuses to start without it (keys could be neither made nor verified). */
  assertConfigured(): void {
    void this.hashSecret;
  }

  private get hashSecret(): string {
    const secret = this.config.apiKeyHashSecret;
    if (!secret) throw new Error('API_KEY_HASH_SECRET is required to verify API keys (npm start sets one)');
    return secret;
  }

  async verifyKey(secret: string): Promise<VerifiedKey | null> {
    if (secret.length < MIN_KEY_LENGTH || secret.length > 256) return null;
    // A secret in our format with a wrong checksum is a typo or a forgery: no lookup at all.
    if (secret.startsWith(KEY_PREFIX) && !isWellFormedKey(secret)) return null;
    const hmac = keyedHash(secret, this.hashSecret);
    const cached = this.cache.get(hmac);
    if (cached && cached.expiresAt > Date.now() && (cached.key.expiresAt === null || cached.key.expiresAt.getTime() > Date.now())) {
      // With Redis unreachable the cache stands for at most CACHE_TTL_MS, as before markers existed.
      // One EXISTS for both markers on one server; on a cluster one per slot (countExisting).
      const marked = await countExisting(this.redis, [revokedMarker(cached.key.keyId), userChangedMarker(cached.key.userId)]).catch(() => 0);
      if (marked === 0) return cached.key;
      this.cache.delete(hmac);
    }

    const candidates = await this.keys.find({ where: { prefix: secret.slice(0, LOOKUP_LENGTH), revokedAt: IsNull() } });
    const legacy = createHash('sha256').update(secret).digest('hex');
    const row = candidates.find((key) => safeEqual(key.secretHash, key.hashKind === 'hmac' ? hmac : legacy));
    if (!row || (row.expiresAt !== null && row.expiresAt.getTime() <= Date.now())) return null;
    const owner = await this.users.findOneBy({ id: row.userId });
    const key: VerifiedKey = {
      keyId: row.id,
      userId: row.userId,
      role: owner?.role ?? null,
      access: row.scopes.includes('full') ? 'full' : 'agents',
      appId: row.appId,
      expiresAt: row.expiresAt,
      limits: { perMinute: row.rateLimitPerMinute, streams: row.maxStreams },
    };
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(hmac, { key, expiresAt: Date.now() + CACHE_TTL_MS });
    return key;
  }

  /** last_used_at, written at most once a minute per key and process, never on the request's path. */
  noteUsed(keyId: string): void {
    const now = Date.now();
    if ((this.lastUsedWritten.get(keyId) ?? 0) > now - LAST_USED_EVERY_MS) return;
    if (this.lastUsedWritten.size >= CACHE_MAX) this.lastUsedWritten.clear();
    this.lastUsedWritten.set(keyId, now);
    void this.keys.update({ id: keyId }, { lastUsedAt: new Date(now) }).catch(() => undefined);
  }

  /**
   * A revoked key (its row already committed as revoked): dropped here, and marked in Redis so that
   * no replica answers from its cache any more.
   */
  async revoked(keyId: string): Promise<void> {
    for (const [hash, entry] of this.cache) if (entry.key.keyId === keyId) this.cache.delete(hash);
    await this.redis.set(revokedMarker(keyId), '1', 'PX', REVOKED_MARKER_MS).catch((error: unknown) => {
      this.logger.warn(`revocation marker not set (other replicas drop the key within ${CACHE_TTL_MS / 1000} s): ${String(error)}`);
    });
  }

  /**
   * A user's role changed (the row already committed): their keys' entries are dropped here and
   * marked in Redis, so every replica re-reads the role on the next request. Token users read
   * their row on every request already.
   */
  async userChanged(userId: string): Promise<void> {
    for (const [hash, entry] of this.cache) if (entry.key.userId === userId) this.cache.delete(hash);
    await this.redis.set(userChangedMarker(userId), '1', 'PX', REVOKED_MARKER_MS).catch((error: unknown) => {
      this.logger.warn(`role change marker not set (other replicas see the new role within ${CACHE_TTL_MS / 1000} s): ${String(error)}`);
    });
  }

  /** The keyed hash a new key is stored under. */
  hashForStorage(secret: string): string {
    return keyedHash(secret, this.hashSecret);
  }

  /** The operator CLI: a product user (created if new) with one fresh full-access key; the secret is shown once. */
  async createUserWithKey(userName: string): Promise<{ userId: string; secret: string }> {
    if (/^(end-user|jwt|user):/.test(userName)) throw new Error('user names starting with end-user:, jwt: or user: are reserved');
    const secret = generateKeySecret();
    // Fails before any user is created when the hash secret is missing.
    this.assertConfigured();
    const userId = await this.ensureUser(userName);
    await this.storeKey(userId, `${userName} key`, secret);
    return { userId, secret };
  }

  /** Makes the configured bootstrap secret a full-access key of the `bootstrap` administrator; safe to race from several replicas. */
  async ensureBootstrapKey(secret: string): Promise<void> {
    if (secret.length < MIN_KEY_LENGTH) throw new Error(`BOOTSTRAP_API_KEY must be at least ${MIN_KEY_LENGTH} characters`);
    const userId = await this.ensureUser('bootstrap', true);
    // A bootstrap key stored before keyed hashing is upgraded in place, so it stays one key (one revocation ends it).
    await this.keys.update({ secretHash: createHash('sha256').update(secret).digest('hex'), hashKind: 'sha256' }, { secretHash: this.hashForStorage(secret), hashKind: 'hmac' });
    await this.storeKey(userId, 'bootstrap', secret);
  }

  private async storeKey(userId: string, name: string, secret: string): Promise<void> {
    await this.keys
      .createQueryBuilder()
      .insert()
      .values({
        id: newId(),
        userId,
        name,
        prefix: secret.slice(0, LOOKUP_LENGTH),
        secretHash: this.hashForStorage(secret),
        hashKind: 'hmac',
        scopes: ['full'],
        appId: null,
        createdAt: new Date(),
        revokedAt: null,
      })
      .orIgnore()
      .execute();
  }

  /** A product user by name, created on first use; `isAdmin` makes (or keeps) them an administrator (the bootstrap user). */
  async ensureUser(name: string, isAdmin = false): Promise<string> {
    await this.users
      .createQueryBuilder()
      .insert()
      .values({ id: newId(), name, kind: 'user', role: isAdmin ? 'admin' : null, createdAt: new Date() })
      .orIgnore()
      .execute();
    const user = await this.users.findOneByOrFail({ name, kind: 'user' });
    if (isAdmin && user.role !== 'admin') {
      await this.users.update({ id: user.id }, { role: 'admin' });
      await this.userChanged(user.id);
    }
    return user.id;
  }
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
