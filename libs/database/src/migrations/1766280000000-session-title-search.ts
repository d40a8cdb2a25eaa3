import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The operators' explorer searches titles with `q` (ILIKE '%…%'): without an index that reads
 * every session (350 ms at 100,000 sessions in the bench's console scenario, growing with the
 * table). A trigram GIN index answers it from the index. pg_trgm ships with Postgres (contrib) and
 * is a trusted extension (PG 13+): the database owner may create it without superuser rights.
 * Titles change rarely (set at creation or by an update), so the index costs the turn path nothing:
 * a turn's session updates leave `title` alone and stay HOT.
 */
export class SessionTitleSearch1766280000000 implements MigrationInterface {
  name = 'SessionTitleSearch1766280000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await q.query(`CREATE INDEX IF NOT EXISTS sessions_title_trgm_idx ON sessions USING gin (title gin_trgm_ops) WHERE deleted_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sessions_title_trgm_idx`);
    // The extension stays: other objects of the database may have come to use it.
  }
}
