import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A message sent to a paused queue runs alone before the old queue resumes: it carries a higher
 * claim priority than the inputs that were waiting.
 */
export class InputPriority1764720000000 implements MigrationInterface {
  name = 'InputPriority1764720000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE inputs ADD COLUMN priority smallint NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE inputs DROP COLUMN priority`);
  }
}
