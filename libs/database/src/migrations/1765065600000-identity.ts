import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Identity and tenancy. Every principal a resource can belong to is a `users` row: product users
 * (API keys, or JWT subjects) and the end users of an app, each end user one row per
 * (product user, app, external id) — so every owner-scoped table keeps its one `owner_id`. API keys
 * get an access level, an optional app, an expiry and per-key limits; new secrets are stored as a
 * keyed hash (HMAC). Administrative actions leave an audit trail.
 */
export class Identity1765065600000 implements MigrationInterface {
  name = 'Identity1765065600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE users ADD COLUMN kind varchar(16) NOT NULL DEFAULT 'user' CHECK (kind IN ('user', 'end_user'))`);
    await q.query(`ALTER TABLE users ADD COLUMN is_admin boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE users ADD COLUMN subject varchar(255) UNIQUE`);
    await q.query(`ALTER TABLE users ADD COLUMN parent_id uuid REFERENCES users (id)`);
    await q.query(`ALTER TABLE users ADD COLUMN app_id varchar(128)`);
    await q.query(`ALTER TABLE users ADD COLUMN external_id varchar(128)`);
    await q.query(`
      ALTER TABLE users ADD CONSTRAINT users_end_user_shape CHECK (
        (kind = 'end_user') = (parent_id IS NOT NULL AND app_id IS NOT NULL AND external_id IS NOT NULL)
        AND NOT (kind = 'end_user' AND is_admin))`);
    // One end user per (product user, app, external id): concurrent first use resolves to the same row.
    await q.query(`CREATE UNIQUE INDEX users_one_end_user ON users (parent_id, app_id, external_id) WHERE kind = 'end_user'`);
    await q.query(`UPDATE users SET is_admin = true WHERE name = 'bootstrap'`);

    await q.query(`ALTER TABLE api_keys ADD COLUMN app_id varchar(128)`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN expires_at timestamptz`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN hash_kind varchar(8) NOT NULL DEFAULT 'sha256' CHECK (hash_kind IN ('sha256', 'hmac'))`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN rate_limit_per_minute integer CHECK (rate_limit_per_minute > 0)`);
    await q.query(`ALTER TABLE api_keys ADD COLUMN max_streams integer CHECK (max_streams > 0)`);
    // Keys made before access levels were arrays of scopes: `full` wherever it appeared, else `agents`.
    await q.query(`UPDATE api_keys SET scopes = CASE WHEN 'full' = ANY (scopes) THEN '{full}'::text[] ELSE '{agents}'::text[] END`);
    await q.query(`ALTER TABLE api_keys ADD CONSTRAINT api_keys_access CHECK (scopes = '{full}' OR scopes = '{agents}')`);
    await q.query(`CREATE INDEX api_keys_user_idx ON api_keys (user_id, created_at)`);

    await q.query(`
      CREATE TABLE audit_log (
        id uuid PRIMARY KEY,
        actor_id uuid REFERENCES users (id),
        key_id uuid,
        action varchar(64) NOT NULL,
        target_type varchar(32) NOT NULL,
        target_id varchar(128) NOT NULL,
        details jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX audit_log_page_idx ON audit_log (created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE audit_log`);
    await q.query(`DROP INDEX api_keys_user_idx`);
    await q.query(`ALTER TABLE api_keys DROP CONSTRAINT api_keys_access`);
    for (const column of ['max_streams', 'rate_limit_per_minute', 'hash_kind', 'last_used_at', 'expires_at', 'app_id']) await q.query(`ALTER TABLE api_keys DROP COLUMN ${column}`);
    await q.query(`DROP INDEX users_one_end_user`);
    await q.query(`ALTER TABLE users DROP CONSTRAINT users_end_user_shape`);
    for (const column of ['external_id', 'app_id', 'parent_id', 'subject', 'is_admin', 'kind']) await q.query(`ALTER TABLE users DROP COLUMN ${column}`);
  }
}
