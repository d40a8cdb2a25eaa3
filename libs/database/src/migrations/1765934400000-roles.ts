import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Roles: `admin` (everything), `operator` (reads every session and acts on it) or
 * `viewer` (reads every session), granted to product users only; null is a product user without a
 * role. `role` becomes the one source of truth: `is_admin` is kept as a column generated from it,
 * so readers of the old column (a replica still on the previous release, ad-hoc SQL) keep working
 * and the two can never disagree. The end-user shape check loses its `is_admin` half (the role
 * check now says it: an end user holds no role).
 */
export class Roles1765934400000 implements MigrationInterface {
  name = 'Roles1765934400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE users ADD COLUMN role varchar(16)`);
    await q.query(`ALTER TABLE users ADD CONSTRAINT users_role CHECK (role IS NULL OR (role IN ('admin', 'operator', 'viewer') AND kind = 'user'))`);
    await q.query(`UPDATE users SET role = 'admin' WHERE is_admin`);
    // Dropping is_admin would drop this constraint silently: it is re-created without it first.
    await q.query(`ALTER TABLE users DROP CONSTRAINT users_end_user_shape`);
    await q.query(`ALTER TABLE users ADD CONSTRAINT users_end_user_shape CHECK ((kind = 'end_user') = (parent_id IS NOT NULL AND app_id IS NOT NULL AND external_id IS NOT NULL))`);
    await q.query(`ALTER TABLE users DROP COLUMN is_admin`);
    await q.query(`ALTER TABLE users ADD COLUMN is_admin boolean GENERATED ALWAYS AS (role IS NOT DISTINCT FROM 'admin') STORED`);
    // The operators' explorer walks every owner's sessions newest first (the owner-scoped lists
    // have sessions_owner_page_idx). No index touches current_turn or the queue counters: those
    // change on every turn, and an index on them would cost the turn path its HOT updates.
    await q.query(`CREATE INDEX IF NOT EXISTS sessions_page_idx ON sessions (created_at, id) WHERE deleted_at IS NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS sessions_agent_page_idx ON sessions (agent_id, created_at, id) WHERE deleted_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sessions_agent_page_idx`);
    await q.query(`DROP INDEX sessions_page_idx`);
    await q.query(`ALTER TABLE users DROP COLUMN is_admin`);
    await q.query(`ALTER TABLE users ADD COLUMN is_admin boolean NOT NULL DEFAULT false`);
    await q.query(`UPDATE users SET is_admin = true WHERE role = 'admin'`);
    await q.query(`ALTER TABLE users DROP CONSTRAINT users_end_user_shape`);
    await q.query(`
      ALTER TABLE users ADD CONSTRAINT users_end_user_shape CHECK (
        (kind = 'end_user') = (parent_id IS NOT NULL AND app_id IS NOT NULL AND external_id IS NOT NULL)
        AND NOT (kind = 'end_user' AND is_admin))`);
    await q.query(`ALTER TABLE users DROP CONSTRAINT users_role`);
    await q.query(`ALTER TABLE users DROP COLUMN role`);
  }
}
