import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Session TTL (issue 43): an agent's and a project's `ttl` (jsonb, as written), and on each session
 * the effective seconds it goes by, resolved when it was created (its own, its project's, its
 * agent's: the shortest). Nullable columns without a default: catalogue-only changes, no table
 * rewrite; a session without a TTL keeps nulls and costs nothing.
 *
 * `ttl_check_at`: when the sweep next looks at the session, no later than the TTL can act on it
 * (last_active_at + the shortest TTL left to act, when that was written). Written only where a TTL
 * is set or changed (create, update, fork) and by the sweep itself, which re-reads last_active_at
 * under the session lock and either acts or pushes the check forward. The index is on this column,
 * never on last_active_at: every input, claim and turn update moves last_active_at, and an index on
 * a column an UPDATE changes makes that update non-HOT (a new entry in every index of the table),
 * partial index or not. Activity never writes ttl_check_at, so those updates stay HOT.
 */
export class SessionTtl1767400300000 implements MigrationInterface {
  name = 'SessionTtl1767400300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents ADD COLUMN ttl jsonb`);
    await q.query(`ALTER TABLE projects ADD COLUMN ttl jsonb`);
    await q.query(`ALTER TABLE sessions ADD COLUMN ttl_archive_after_s integer, ADD COLUMN ttl_delete_after_s integer, ADD COLUMN ttl_check_at timestamptz`);
    await q.query(`CREATE INDEX sessions_ttl_check_idx ON sessions (ttl_check_at) WHERE ttl_check_at IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS sessions_ttl_check_idx`);
    await q.query(`ALTER TABLE sessions DROP COLUMN IF EXISTS ttl_archive_after_s, DROP COLUMN IF EXISTS ttl_delete_after_s, DROP COLUMN IF EXISTS ttl_check_at`);
    await q.query(`ALTER TABLE projects DROP COLUMN IF EXISTS ttl`);
    await q.query(`ALTER TABLE agents DROP COLUMN IF EXISTS ttl`);
  }
}
