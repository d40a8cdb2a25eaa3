import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId, prepared } from '#libs/database';
import { DomainError } from '#libs/errors';
import { AuthInvalidations } from './auth-invalidations.js';
import { ApiKeyEntity, UserEntity } from './entities.js';
import type { Role } from './principal.js';
import { generateKeySecret, isWellFormedKey, KEY_PREFIX, keyedHash, LOOKUP_LENGTH } from './key-format.js';
import { UnknownKeys } from './unknown-keys.js';

const MIN_KEY_LENGTH = 20;
const CACHE_MAX = 10_000;
const LAST_USED_EVERY_MS = 60_000;

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
 * API_KEY_HASH_SECRET) in constant time. Verified keys are cached so the hot path pays neither a
 * query nor a Redis call per request; a revocation or role change reaches every replica's cache
 * through `AuthInvalidations` before it answers, so the next request, on any replica, is refused
 * or carries the new role (the guarantee and its bounds are there).
 */
@Injectable()
export class AuthService {
  private readonly lastUsedWritten = new Map<string, number>();
  /** Secrets that matched no live key: asked of Postgres at most once per AUTH_CACHE_TTL_MS each (unknown-keys.ts). */
  private readonly unknown: UnknownKeys;

  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
    private readonly invalidations: AuthInvalidations,
    private readonly config: AppConfig,
  ) {
    this.unknown = new UnknownKeys({ ttlMs: config.authCacheTtlMs, max: config.authNegativeCacheMax });
  }

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
    const cache = this.invalidations.cache;
    const cached = cache.get(hmac);
    if (cached) return cached;
    if (this.unknown.has(hmac)) return null;

    // Taken before the read: an invalidation that arrives while it runs keeps its answer out of the cache.
    const generation = cache.begin();
    // One statement for the key and its owner's role (a miss is rare: once per key, replica and cache lifetime).
    const candidates = (await this.keys.query(
      prepared(`SELECT k.id, k.user_id, k.secret_hash, k.hash_kind, k.scopes, k.app_id, k.expires_at, k.rate_limit_per_minute, k.max_streams, u.role, u.suspended_at
       FROM api_keys k LEFT JOIN users u ON u.id = k.user_id WHERE k.prefix = $1 AND k.revoked_at IS NULL`),
      [secret.slice(0, LOOKUP_LENGTH)],
    )) as KeyRow[];
    const legacy = createHash('sha256').update(secret).digest('hex');
    const row = candidates.find((key) => safeEqual(key.secret_hash, key.hash_kind === 'hmac' ? hmac : legacy));
    if (!row || (row.expires_at !== null && row.expires_at.getTime() <= Date.now())) {
      this.unknown.add(hmac);
      return null;
    }
    // Never cached: a suspended user's next request reads Postgres again (and a reactivation applies at once).
    if (row.suspended_at !== null) throw userSuspended();
    const key: VerifiedKey = {
      keyId: row.id,
      userId: row.user_id,
      role: row.role,
      access: row.scopes.includes('full') ? 'full' : 'agents',
      appId: row.app_id,
      expiresAt: row.expires_at,
      limits: { perMinute: row.rate_limit_per_minute, streams: row.max_streams },
    };
    cache.set(hmac, key, generation);
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

  /** A revoked key (its row already committed as revoked): dropped from every replica's cache before this resolves. */
  async revoked(keyId: string): Promise<void> {
    await this.invalidations.broadcast({ keyId });
  }

  /**
   * A user's role or suspension changed (the row already committed): their keys' entries are dropped on every
   * replica before this resolves, so the next request anywhere reads the new role. Token users
   * read their row on every request already.
   */
  async userChanged(userId: string): Promise<void> {
    await this.invalidations.broadcast({ userId });
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

interface KeyRow {
  id: string;
  user_id: string;
  secret_hash: string;
  hash_kind: 'sha256' | 'hmac';
  scopes: string[];
  app_id: string | null;
  expires_at: Date | null;
  rate_limit_per_minute: number | null;
  max_streams: number | null;
  role: Role | null;
  suspended_at: Date | null;
}

/** The one refusal of a suspended user's credentials, keys and tokens alike. */
export function userSuspended(): DomainError {
  return new DomainError('user_suspended', 'This user is suspended by an administrator');
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
