import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Running turns per account (fair shares): a turn records the account it runs for (its
 * session owner's product user; an app end user's is the product user behind the app), and a
 * partial index holds the running ones only, so the claim counts an account's running turns in
 * index entries bounded by MAX_ACTIVE_TURNS_PER_OWNER, whatever the account's number of sessions.
 * Ended turns leave the index (their status is outside its predicate) and keep the column.
 */
export class AccountRunningTurns1766627900000 implements MigrationInterface {
  name = 'AccountRunningTurns1766627900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE turns ADD COLUMN account_id uuid`);
    await q.query(`
      UPDATE turns t SET account_id = (
        SELECT CASE WHEN u.kind = 'end_user' THEN u.parent_id ELSE u.id END FROM sessions s JOIN users u ON u.id = s.owner_id WHERE s.id = t.session_id)
      WHERE t.status IN ('queued', 'in_progress', 'requires_action')`);
    await q.query(`CREATE INDEX turns_running_by_account_idx ON turns (account_id) WHERE status IN ('queued', 'in_progress')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS turns_running_by_account_idx`);
    await q.query(`ALTER TABLE turns DROP COLUMN account_id`);
  }
}
