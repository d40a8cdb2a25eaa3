import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A session's environment (the normalised `openai_hosted` param, its agent's default applied):
 * null for a session without one, which every existing session is. A nullable column without a
 * default is a catalogue change only (no table rewrite, no scan).
 */
export class SessionEnvironment1766900100000 implements MigrationInterface {
  name = 'SessionEnvironment1766900100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN IF NOT EXISTS environment jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions DROP COLUMN IF EXISTS environment`);
  }
}
