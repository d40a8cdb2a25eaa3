import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One live artifact per (session, turn, path): a file written then rewritten in one turn is one
 * artifact holding its latest content (clients retrieve a turn's artifact by path). Older duplicate
 * rows are soft-deleted (the newest, by time-ordered id, stays) before the unique index is built.
 */
export class ArtifactPerTurnPath1766900200000 implements MigrationInterface {
  name = 'ArtifactPerTurnPath1766900200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE session_artifacts a SET deleted_at = now()
      WHERE a.deleted_at IS NULL AND a.turn_id IS NOT NULL AND EXISTS (
        SELECT 1 FROM session_artifacts b WHERE b.session_id = a.session_id AND b.turn_id = a.turn_id AND b.path = a.path
          AND b.deleted_at IS NULL AND b.id > a.id)`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS session_artifacts_turn_path_idx ON session_artifacts (session_id, turn_id, path) WHERE deleted_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS session_artifacts_turn_path_idx`);
  }
}
