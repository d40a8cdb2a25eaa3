import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The CHECKs the declared state machines (defineMachine) had no constraint for: the status of a
 * cooperation signal (the ending status of a member's turn, or `settled`) and the kind of a turn's
 * waitpoint (a union by kind). Each is added NOT VALID (no scan under the ACCESS EXCLUSIVE lock the
 * ALTER takes) and validated after, in a transaction of its own (a scan under a lock that lets
 * writes through): hence no migration transaction. Dropped first when present, so a rerun after a
 * partial apply converges. test/e2e/schema-states.test.ts holds
 * every machine's states to the constraint the database has.
 */
export class StatusChecks1766801700000 implements MigrationInterface {
  name = 'StatusChecks1766801700000';
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE cooperation_signals DROP CONSTRAINT IF EXISTS cooperation_signals_status_check`);
    await q.query(`ALTER TABLE cooperation_signals ADD CONSTRAINT cooperation_signals_status_check CHECK (status IN ('completed', 'failed', 'cancelled', 'settled')) NOT VALID`);
    await q.query(`ALTER TABLE cooperation_signals VALIDATE CONSTRAINT cooperation_signals_status_check`);
    await q.query(`ALTER TABLE turns DROP CONSTRAINT IF EXISTS turns_waitpoint_kind_check`);
    await q.query(
      `ALTER TABLE turns ADD CONSTRAINT turns_waitpoint_kind_check CHECK (waitpoint IS NULL OR waitpoint->>'kind' IN ('question', 'approval', 'client_tool', 'cooperation')) NOT VALID`,
    );
    await q.query(`ALTER TABLE turns VALIDATE CONSTRAINT turns_waitpoint_kind_check`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE turns DROP CONSTRAINT IF EXISTS turns_waitpoint_kind_check`);
    await q.query(`ALTER TABLE cooperation_signals DROP CONSTRAINT IF EXISTS cooperation_signals_status_check`);
  }
}
