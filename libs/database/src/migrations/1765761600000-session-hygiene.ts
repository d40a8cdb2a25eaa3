import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Resource hygiene of sessions:
 * - `metadata`: the caller's string labels (bounded by the API: 16 keys, 64-character keys,
 *   512-character values); the column only insists on an object. Lists filter on it with
 *   `metadata @> $1`, which the jsonb_path_ops GIN index answers. The turn path never writes the
 *   column, so its updates stay HOT.
 * - `revision`: bumped by every update made through the session routes (update, archive, delete);
 *   `If-Match` compares it inside the UPDATE.
 * - `deleted_at`: a soft delete. Every owner-scoped lookup filters on it; the session's files are
 *   tombstoned in the deleting transaction and the files sweep removes their bytes and rows.
 */
export class SessionHygiene1765761600000 implements MigrationInterface {
  name = 'SessionHygiene1765761600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN metadata jsonb NOT NULL DEFAULT '{}'::jsonb CONSTRAINT sessions_metadata_object CHECK (jsonb_typeof(metadata) = 'object')`);
    await q.query(`ALTER TABLE sessions ADD COLUMN revision integer NOT NULL DEFAULT 1 CONSTRAINT sessions_revision_positive CHECK (revision > 0)`);
    await q.query(`ALTER TABLE sessions ADD COLUMN deleted_at timestamptz`);
    await q.query(`CREATE INDEX sessions_metadata_idx ON sessions USING gin (metadata jsonb_path_ops)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX sessions_metadata_idx`);
    await q.query(`ALTER TABLE sessions DROP COLUMN deleted_at`);
    await q.query(`ALTER TABLE sessions DROP COLUMN revision`);
    await q.query(`ALTER TABLE sessions DROP COLUMN metadata`);
  }
}
