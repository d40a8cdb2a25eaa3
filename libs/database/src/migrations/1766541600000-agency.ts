import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agency: an administrator can suspend a product user (`suspended_at`: every key and
 * token of theirs is refused until reactivated); an agent's owner can restrict which models callers
 * may switch to (`allowed_models`, null: no override for callers who do not manage the agent) and
 * pin its approval mode (`tool_approval_pinned`: such callers may raise it, never lower it).
 */
export class Agency1766541600000 implements MigrationInterface {
  name = 'Agency1766541600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE users ADD COLUMN suspended_at timestamptz`);
    await q.query(`ALTER TABLE agents ADD COLUMN allowed_models text[]`);
    await q.query(`ALTER TABLE agents ADD COLUMN tool_approval_pinned boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents DROP COLUMN tool_approval_pinned`);
    await q.query(`ALTER TABLE agents DROP COLUMN allowed_models`);
    await q.query(`ALTER TABLE users DROP COLUMN suspended_at`);
  }
}
