import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { newId } from '#libs/database';
import { ApiKeyEntity, UserEntity } from './entities.js';
import type { Principal } from './principal.js';

const PREFIX_LENGTH = 12;
const MIN_KEY_LENGTH = 20;
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 10_000;
const FULL_SCOPES = ['full'];

/**
 * API keys are stored as a SHA-256 of the secret (keys are long random strings, so a slow hash buys
 * nothing) and found by their first characters. Verified principals are cached briefly so the hot
 * path does not pay a query per request; a revoked key stops working within CACHE_TTL_MS.
 */
@Injectable()
export class AuthService {
  private readonly cache = new Map<string, { principal: Principal; expiresAt: number }>();

  constructor(
    @InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>,
    @InjectRepository(UserEntity) private readonly users: Repository<UserEntity>,
  ) {}

  async authenticate(secret: string): Promise<Principal | null> {
    if (secret.length < MIN_KEY_LENGTH || secret.length > 256) return null;
    const hash = hashSecret(secret);
    const cached = this.cache.get(hash);
    if (cached && cached.expiresAt > Date.now()) return cached.principal;

    const candidates = await this.keys.find({ where: { prefix: secret.slice(0, PREFIX_LENGTH) } });
    const match = candidates.find((key) => key.revokedAt === null && safeEqual(key.secretHash, hash));
    if (!match) return null;
    const principal: Principal = { userId: match.userId, keyId: match.id, scopes: match.scopes };
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(hash, { principal, expiresAt: Date.now() + CACHE_TTL_MS });
    return principal;
  }

  /** Makes the configured bootstrap secret a full-scope key of the `bootstrap` user; safe to race from several replicas. */
  async ensureBootstrapKey(secret: string): Promise<void> {
    if (secret.length < MIN_KEY_LENGTH) throw new Error(`BOOTSTRAP_API_KEY must be at least ${MIN_KEY_LENGTH} characters`);
    const userId = await this.ensureUser('bootstrap');
    await this.insertKey(userId, 'bootstrap', secret, FULL_SCOPES);
  }

  /** Creates a new user with one fresh full-scope key and returns the secret (shown once, never stored). */
  async createUserWithKey(userName: string): Promise<{ userId: string; secret: string }> {
    const userId = await this.ensureUser(userName);
    const secret = `yx_${randomBytes(30).toString('base64url')}`;
    await this.insertKey(userId, `${userName} key`, secret, FULL_SCOPES);
    return { userId, secret };
  }

  private async ensureUser(name: string): Promise<string> {
    await this.users
      .createQueryBuilder()
      .insert()
      .values({ id: newId(), name, createdAt: new Date() })
      .orIgnore()
      .execute();
    const user = await this.users.findOneByOrFail({ name });
    return user.id;
  }

  private async insertKey(userId: string, name: string, secret: string, scopes: string[]): Promise<void> {
    await this.keys
      .createQueryBuilder()
      .insert()
      .values({
        id: newId(),
        userId,
        name,
        prefix: secret.slice(0, PREFIX_LENGTH),
        secretHash: hashSecret(secret),
        scopes,
        createdAt: new Date(),
        revokedAt: null,
      })
      .orIgnore()
      .execute();
  }
}

function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
