import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AuditLog } from '#libs/audit';
import { AppConfig } from '#libs/config';
import { listEnvelope, newId, unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { ApiKeyCreatedDto, ApiKeyDto, ApiKeyListDto, CreateApiKeyDto } from './api-key.dto.js';
import { AuthService } from './auth.service.js';
import { Principals } from './end-users.js';
import { ApiKeyEntity, UserEntity } from './entities.js';
import { generateKeySecret, LOOKUP_LENGTH } from './key-format.js';
import { assertAdmin, type Principal } from './principal.js';

/**
 * Key management for full-access callers: their own keys, or (administrators) anyone's. A new
 * key's secret is shown once and stored only as a keyed hash; a revocation takes effect at once on
 * every api replica. Each action is in the audit trail, written in its transaction.
 */
@Injectable()
export class ApiKeys {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly auth: AuthService,
    private readonly audit: AuditLog,
    private readonly config: AppConfig,
    private readonly principals: Principals,
  ) {}

  async create(principal: Principal, dto: CreateApiKeyDto): Promise<ApiKeyCreatedDto> {
    const ownerId = await this.ownerOf(principal, dto);
    if (dto.expires_at && dto.expires_at.getTime() <= Date.now()) throw DomainError.validation([{ field: 'expires_at', errors: ['must be in the future'] }]);
    // Raising one's own limits above the deployment's is for administrators.
    const above = (value: number | undefined, limit: number): boolean => value !== undefined && limit > 0 && value > limit;
    if (!principal.isAdmin && (above(dto.rate_limit_per_minute, this.config.rateLimitPerMinute) || above(dto.max_streams, this.config.maxStreamsPerPrincipal))) {
      throw new DomainError('forbidden', 'Limits above the deployment defaults are set by administrators');
    }
    const expiresAt = this.boundedExpiry(principal, dto.expires_at ?? null);
    const secret = generateKeySecret();
    const row = await this.dataSource.transaction(async (manager) => {
      // An administrator may name a user that does not exist yet: it is created on first use.
      // (A user named by subject already has its row: ownerOf resolved it as a user token does.)
      await manager
        .createQueryBuilder()
        .insert()
        .into(UserEntity)
        .values({ id: ownerId, name: `user:${ownerId}`, kind: 'user', role: null, createdAt: new Date() })
        .orIgnore()
        .execute();
      // Locked: concurrent creates for one owner are counted one after the other, so the cap holds.
      const owner = await manager.findOne(UserEntity, { where: { id: ownerId }, lock: { mode: 'pessimistic_write' } });
      if (!owner || owner.kind !== 'user') throw DomainError.validation([{ field: dto.user_subject !== undefined ? 'user_subject' : 'user_id', errors: ['must name a product user, not an app end user'] }]);
      // Keys share their user's allowances, but each is a credential to guard and a row to read: capped.
      const cap = this.config.maxKeysPerUser;
      if (cap > 0 && (await this.liveKeys(manager, ownerId)) >= cap) {
        throw new DomainError('api_key_limit', `The user already holds ${cap} live API keys, the most allowed: revoke one first`, { limit: cap });
      }
      const entity = manager.create(ApiKeyEntity, {
        id: newId(),
        userId: ownerId,
        name: dto.name,
        prefix: secret.slice(0, LOOKUP_LENGTH),
        secretHash: this.auth.hashForStorage(secret),
        hashKind: 'hmac',
        scopes: [dto.access],
        appId: dto.app_id ?? null,
        rateLimitPerMinute: dto.rate_limit_per_minute ?? null,
        maxStreams: dto.max_streams ?? null,
        createdAt: new Date(),
        expiresAt,
        lastUsedAt: null,
        revokedAt: null,
      });
      await manager.insert(ApiKeyEntity, entity);
      await this.audit.record(manager, {
        actorId: principal.actorId,
        keyId: principal.keyId,
        action: 'api_key.created',
        targetType: 'api_key',
        targetId: entity.id,
        details: { name: dto.name, access: dto.access, app_id: entity.appId, user_id: ownerId, ...(dto.user_subject !== undefined ? { user_subject: dto.user_subject } : {}) },
      });
      return entity;
    });
    return { ...toDto(row), secret };
  }

  /**
   * A key minted with a user token outlives the token by design, so it must not outlive it without
   * bound: a stolen token would otherwise buy a credential for ever. Its expiry is brought within
   * USER_TOKEN_KEY_MAX_TTL_S (the key's `expires_at` says the one it got); keys minted with a key
   * keep what they ask for.
   */
  private boundedExpiry(principal: Principal, requested: Date | null): Date | null {
    if (principal.keyId !== null) return requested;
    const latest = new Date(Date.now() + this.config.userTokenKeyMaxTtlS * 1000);
    return requested === null || requested.getTime() > latest.getTime() ? latest : requested;
  }

  /**
   * The key's owner: the caller, a user id, or a token subject, resolved to the very users row a
   * user token with that `sub` maps to (created on first use, as the token would), so a key minted
   * for "alice" and alice's tokens are one principal. Another user than the caller is for
   * administrators: a caller who is not one only looks the subject up, creating nothing.
   */
  private async ownerOf(principal: Principal, dto: CreateApiKeyDto): Promise<string> {
    if (dto.user_id !== undefined && dto.user_subject !== undefined) {
      throw DomainError.validation([{ field: 'user_subject', errors: ['give user_id or user_subject, not both'] }]);
    }
    if (dto.user_subject === undefined) {
      const ownerId = dto.user_id ?? principal.actorId;
      if (ownerId !== principal.actorId) assertAdmin(principal);
      return ownerId;
    }
    if (principal.isAdmin) return (await this.principals.subjectUser(dto.user_subject)).id;
    // Not an administrator: only the caller's own subject will do (unknown subjects are someone else's).
    if ((await this.principals.findSubjectUser(dto.user_subject)) !== principal.actorId) assertAdmin(principal);
    return principal.actorId;
  }

  private async liveKeys(manager: EntityManager, userId: string): Promise<number> {
    const rows = (await manager.query(`SELECT count(*)::int AS n FROM api_keys WHERE user_id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`, [userId])) as { n: number }[];
    return rows[0]?.n ?? 0;
  }

  /** Administrators see every key; other callers their own. Never a secret. */
  async list(principal: Principal): Promise<ApiKeyListDto> {
    const rows = await this.dataSource.getRepository(ApiKeyEntity).find({
      where: principal.isAdmin ? {} : { userId: principal.actorId },
      order: { createdAt: 'DESC' },
      take: 1000,
    });
    const data = rows.map(toDto);
    return listEnvelope(data, rows.length === 1000);
  }

  async revoke(principal: Principal, keyId: string): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      const key = /^[0-9a-f-]{36}$/i.test(keyId) ? await manager.findOneBy(ApiKeyEntity, { id: keyId }) : null;
      if (!key || key.revokedAt !== null || (!principal.isAdmin && key.userId !== principal.actorId)) throw DomainError.notFound(`API key ${keyId}`);
      await manager.update(ApiKeyEntity, { id: keyId }, { revokedAt: new Date() });
      await this.audit.record(manager, { actorId: principal.actorId, keyId: principal.keyId, action: 'api_key.revoked', targetType: 'api_key', targetId: keyId, details: { name: key.name } });
    });
    await this.auth.revoked(keyId);
  }
}

function toDto(row: ApiKeyEntity): ApiKeyDto {
  return {
    id: row.id,
    object: 'api_key',
    name: row.name,
    access: row.scopes.includes('full') ? 'full' : 'agents',
    app_id: row.appId,
    user_id: row.userId,
    prefix: row.prefix,
    rate_limit_per_minute: row.rateLimitPerMinute,
    max_streams: row.maxStreams,
    created_at: unixSeconds(row.createdAt),
    expires_at: unixSeconds(row.expiresAt),
    last_used_at: unixSeconds(row.lastUsedAt),
    revoked_at: unixSeconds(row.revokedAt),
  };
}
