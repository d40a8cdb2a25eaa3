import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Attachment preparations are retried with exponential backoff. `attachment_retry_at` is when the
 * recovery sweep may next try an input still preparing (the accepting request's job tries first;
 * the sweep's first try comes after the grace period), `attachment_attempts` how many times the
 * sweep tried. The sweep takes due inputs by that time and pushes it back as it starts each try, so
 * inputs that keep failing (a lost upload, a corrupt one) are tried less and less often and never
 * hold up a newer input whose job was lost.
 */
export class PreparationBackoff1765330120000 implements MigrationInterface {
  name = 'PreparationBackoff1765330120000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE inputs ADD COLUMN attachment_attempts integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE inputs ADD COLUMN attachment_retry_at timestamptz`);
    // Inputs preparing now are due at once, as the sweep saw them before.
    await q.query(`UPDATE inputs SET attachment_retry_at = received_at WHERE attachment_status = 'preparing'`);
    await q.query(`ALTER TABLE inputs ADD CONSTRAINT inputs_preparing_retry CHECK (attachment_status <> 'preparing' OR attachment_retry_at IS NOT NULL)`);
    await q.query(`DROP INDEX inputs_preparing_idx`);
    await q.query(`CREATE INDEX inputs_preparation_due_idx ON inputs (attachment_retry_at) WHERE attachment_status = 'preparing'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX inputs_preparation_due_idx`);
    await q.query(`CREATE INDEX inputs_preparing_idx ON inputs (received_at) WHERE attachment_status = 'preparing'`);
    await q.query(`ALTER TABLE inputs DROP CONSTRAINT inputs_preparing_retry`);
    await q.query(`ALTER TABLE inputs DROP COLUMN attachment_retry_at`);
    await q.query(`ALTER TABLE inputs DROP COLUMN attachment_attempts`);
  }
}
