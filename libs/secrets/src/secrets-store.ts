import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditLog } from '#libs/audit';
import { AppConfig } from '#libs/config';
import { newId, prepared, unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import { SecretCipher } from './secret-cipher.js';
import type { SecretDto, SecretListDto } from './secret.dto.js';

/** Who writes: recorded in the audit trail. */
export interface SecretActor {
  actorId: string;
  keyId: string | null;
}

/** A secret's value as read at call time; `version` tells a rotation apart. */
export interface ResolvedSecret {
  value: string;
  version: number;
}

interface SecretRow {
  id: string;
  owner_id: string | null;
  name: string;
  version: number;
  created_at: Date;
  updated_at: Date;
}

// The unique index's expression (shared secrets, no owner, share one namespace); matching on it uses the index.
const NIL = `'00000000-0000-0000-0000-000000000000'::uuid`;
const OWNER_KEY = `COALESCE(owner_id, ${NIL})`;
const OWNER_MATCHES = `${OWNER_KEY} = COALESCE($1::uuid, ${NIL})`;
const COLUMNS = 'id, owner_id, name, version, created_at, updated_at';

/**
 * Named secrets: credentials an agent references by name (an MCP server's bearer token, an OAuth
 * client secret) instead of holding the value. A secret belongs to a user (their private agents
 * use it) or is shared (owner null: public agents use it). Values are sealed with SECRETS_KEY and
 * never leave this class except to the worker's resolve, at call time, so a replacement reaches
 * running sessions.
 */
@Injectable()
export class SecretsStore {
  private readonly cipher: SecretCipher | null;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly audit: AuditLog,
    config: AppConfig,
  ) {
    this.cipher = config.secretsKey ? new SecretCipher(config.secretsKey) : null;
  }

  async list(owner: string | null): Promise<SecretListDto> {
    const rows: SecretRow[] = await this.dataSource.query(`SELECT ${COLUMNS} FROM secrets WHERE ${OWNER_MATCHES} ORDER BY name`, [owner]);
    return { object: 'list', data: rows.map(toDto) };
  }

  /** Creates the secret or replaces its value (the next version); audited in the same transaction. */
  async put(actor: SecretActor, owner: string | null, name: string, value: string): Promise<{ secret: SecretDto; created: boolean }> {
    const sealed = this.sealer().seal(value, owner, name);
    return this.dataSource.transaction(async (manager) => {
      const [row]: (SecretRow & { created: boolean })[] = await manager.query(
        `INSERT INTO secrets (id, owner_id, name, value_sealed, version, created_at, updated_at) VALUES ($1, $2, $3, $4, 1, clock_timestamp(), clock_timestamp())
         ON CONFLICT ((${OWNER_KEY}), name) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, version = secrets.version + 1, updated_at = clock_timestamp()
         RETURNING ${COLUMNS}, (xmax = 0) AS created`,
        [newId(), owner, name, sealed],
      );
      await this.audit.record(manager, {
        actorId: actor.actorId,
        keyId: actor.keyId,
        action: row.created ? 'secret.created' : 'secret.replaced',
        targetType: 'secret',
        targetId: row.id,
        details: { name, scope: owner === null ? 'shared' : 'own', owner_id: owner, version: row.version },
      });
      return { secret: toDto(row), created: row.created };
    });
  }

  /** Removes the value for good (no soft delete: a credential should not outlive its removal). */
  async delete(actor: SecretActor, owner: string | null, name: string): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      const [rows]: [SecretRow[], number] = await manager.query(`DELETE FROM secrets WHERE ${OWNER_MATCHES} AND name = $2 RETURNING ${COLUMNS}`, [owner, name]);
      const row = rows[0];
      if (!row) throw DomainError.notFound(`Secret ${name}`);
      await this.audit.record(manager, {
        actorId: actor.actorId,
        keyId: actor.keyId,
        action: 'secret.deleted',
        targetType: 'secret',
        targetId: row.id,
        details: { name, scope: owner === null ? 'shared' : 'own', owner_id: owner, version: row.version },
      });
    });
  }

  /**
   * The value of a secret, for a call about to be made (the worker); null when there is none.
   * Throws when the deployment has no SECRETS_KEY, or the stored value does not open under it.
   */
  async resolve(owner: string | null, name: string): Promise<ResolvedSecret | null> {
    const cipher = this.opener();
    const [row]: { value_sealed: Buffer; version: number }[] = await this.dataSource.query(
      prepared(`SELECT value_sealed, version FROM secrets WHERE ${OWNER_MATCHES} AND name = $2`),
      [owner, name],
    );
    if (!row) return null;
    return { value: cipher.open(row.value_sealed, owner, name), version: row.version };
  }

  private sealer(): SecretCipher {
    if (!this.cipher) throw new DomainError('not_implemented', 'This deployment stores no secrets: set SECRETS_KEY on the api and the worker');
    return this.cipher;
  }

  private opener(): SecretCipher {
    if (!this.cipher) throw new Error('SECRETS_KEY is not set on this worker: named secrets cannot be read');
    return this.cipher;
  }
}

function toDto(row: SecretRow): SecretDto {
  return {
    id: row.id,
    object: 'secret',
    name: row.name,
    scope: row.owner_id === null ? 'shared' : 'own',
    owner_id: row.owner_id,
    version: row.version,
    created_at: unixSeconds(row.created_at),
    updated_at: unixSeconds(row.updated_at),
  };
}
