import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { Role } from './principal.js';

/** A principal resources belong to: a product user, or an app's end user (one row per product user, app and external id). */
@Entity('users')
export class UserEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('text') name!: string;
  @Column('varchar') kind!: 'user' | 'end_user';
  /** Product users only (a CHECK says so); `is_admin` is a column generated from it, never written. */
  @Column('varchar', { nullable: true }) role!: Role | null;
  /** The JWT `sub` of a user who signs in with tokens. */
  @Column('varchar', { nullable: true }) subject!: string | null;
  @Column('uuid', { name: 'parent_id', nullable: true }) parentId!: string | null;
  @Column('varchar', { name: 'app_id', nullable: true }) appId!: string | null;
  @Column('varchar', { name: 'external_id', nullable: true }) externalId!: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  /** Set by an administrator: every key and token of the user is refused until it is cleared. */
  @Column('timestamptz', { name: 'suspended_at', nullable: true }) suspendedAt!: Date | null;
}

@Entity('api_keys')
export class ApiKeyEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'user_id' }) userId!: string;
  @Column('text') name!: string;
  @Column('varchar') prefix!: string;
  @Column('char', { name: 'secret_hash' }) secretHash!: string;
  /** `hmac`: keyed with API_KEY_HASH_SECRET; `sha256`: keys made before keyed hashing. */
  @Column('varchar', { name: 'hash_kind' }) hashKind!: 'sha256' | 'hmac';
  /** The access level, `{full}` or `{agents}`. */
  @Column('text', { array: true }) scopes!: string[];
  @Column('varchar', { name: 'app_id', nullable: true }) appId!: string | null;
  @Column('integer', { name: 'rate_limit_per_minute', nullable: true }) rateLimitPerMinute!: number | null;
  @Column('integer', { name: 'max_streams', nullable: true }) maxStreams!: number | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'expires_at', nullable: true }) expiresAt!: Date | null;
  @Column('timestamptz', { name: 'last_used_at', nullable: true }) lastUsedAt!: Date | null;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt!: Date | null;
}
