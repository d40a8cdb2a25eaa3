import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A turn's result output is read by run (every turn detail); and the session's pending-input
 * counter may never go negative, so a bookkeeping slip fails loudly instead of drifting.
 */
export class RunItemsIndex1764806400000 implements MigrationInterface {
  name = 'RunItemsIndex1764806400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX items_run_idx ON items (run_id, seq)`);
    await q.query(`ALTER TABLE sessions ADD CONSTRAINT sessions_pending_input_count_non_negative CHECK (pending_input_count >= 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions DROP CONSTRAINT sessions_pending_input_count_non_negative`);
    await q.query(`DROP INDEX items_run_idx`);
  }
}
