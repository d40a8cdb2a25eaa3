import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Named secrets (libs/secrets): credentials an agent's MCP tools reference by name and the worker
 * reads at call time. One namespace per owner, and one shared (owner null) for public agents: the
 * unique index puts the null owners together, which a plain UNIQUE would not (nulls are distinct
 * before Postgres 15's NULLS NOT DISTINCT, and 14 is supported). The value is sealed (AES-GCM
 * under SECRETS_KEY), never stored in clear; deleting a user deletes their secrets.
 */
export class Secrets1766368800000 implements MigrationInterface {
  name = 'Secrets1766368800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE secrets (
        id uuid PRIMARY KEY,
        owner_id uuid REFERENCES users(id) ON DELETE CASCADE,
        name varchar(64) NOT NULL CONSTRAINT secrets_name_format CHECK (name ~ '^[A-Za-z0-9_.-]{1,64}$'),
        value_sealed bytea NOT NULL CONSTRAINT secrets_value_sealed_size CHECK (octet_length(value_sealed) BETWEEN 30 AND 70000),
        version integer NOT NULL CONSTRAINT secrets_version_positive CHECK (version >= 1),
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        CONSTRAINT secrets_updated_after_created CHECK (updated_at >= created_at)
      )`);
    await q.query(`CREATE UNIQUE INDEX secrets_owner_name_key ON secrets ((COALESCE(owner_id, '00000000-0000-0000-0000-000000000000'::uuid)), name)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE secrets`);
  }
}
