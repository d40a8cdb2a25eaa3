import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session TTL (issue 43): an agent's and a project's `ttl` (jsonb, as written), and on each session
 * the effective seconds it goes by, resolved when it was created (its own, its project's, its
 * agent's: the shortest). Nullable columns without a default: catalogue-only changes, no table
 * rewrite; a session without a TTL keeps nulls and costs nothing.
 *
 * The sweep's index is partial: only live roots with something left to do (a delete TTL, or an
 * archive TTL while not archived), by `last_active_at`, so the sweep walks the TTL sessions oldest
 * first and the turn path's updates of every other session never maintain it.
 */
export class SessionTtl1767400300000 implements MigrationInterface {
  name = 'SessionTtl1767400300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents ADD COLUMN ttl jsonb`);
    await q.query(`ALTER TABLE projects ADD COLUMN ttl jsonb`);
    await q.query(`ALTER TABLE sessions ADD COLUMN ttl_archive_after_s integer, ADD COLUMN ttl_delete_after_s integer`);
    await q.query(`CREATE INDEX sessions_ttl_idle_idx ON sessions (last_active_at)
      WHERE deleted_at IS NULL AND depth = 0 AND (ttl_delete_after_s IS NOT NULL OR (ttl_archive_after_s IS NOT NULL AND NOT archived))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS sessions_ttl_idle_idx`);
    await q.query(`ALTER TABLE sessions DROP COLUMN IF EXISTS ttl_archive_after_s, DROP COLUMN IF EXISTS ttl_delete_after_s`);
    await q.query(`ALTER TABLE projects DROP COLUMN IF EXISTS ttl`);
    await q.query(`ALTER TABLE agents DROP COLUMN IF EXISTS ttl`);
  }
}
