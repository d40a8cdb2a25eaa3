import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A session's environment (the normalised `openai_hosted` param, its agent's default applied) and
 * a saved agent's default environment: null for none, which every existing session and agent has.
 * A nullable column without a default is a catalogue change only (no table rewrite, no scan).
 */
export class SessionEnvironment1766900100000 implements MigrationInterface {
  name = 'SessionEnvironment1766900100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN IF NOT EXISTS environment jsonb`);
    await q.query(`ALTER TABLE agents ADD COLUMN IF NOT EXISTS environment jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents DROP COLUMN IF EXISTS environment`);
    await q.query(`ALTER TABLE sessions DROP COLUMN IF EXISTS environment`);
  }
}
