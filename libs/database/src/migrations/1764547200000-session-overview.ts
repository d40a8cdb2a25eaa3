import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The session row carries its own overview (latest turn summary, pending input count), kept in
 * step under the session lock, so reading or listing sessions is one query on one table.
 */
export class SessionOverview1764547200000 implements MigrationInterface {
  name = 'SessionOverview1764547200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions ADD COLUMN pending_input_count integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE sessions ADD COLUMN current_turn jsonb`);
    await q.query(`
      UPDATE sessions s SET pending_input_count = p.n
      FROM (SELECT session_id, count(*)::int AS n FROM inputs WHERE status = 'pending' GROUP BY session_id) p
      WHERE p.session_id = s.id`);
    await q.query(`
      UPDATE sessions s SET current_turn = jsonb_build_object(
        'id', t.id, 'status', t.status, 'current_run_id', t.current_run_id,
        'result_run_id', t.result_run_id, 'waitpoint', t.waitpoint)
      FROM (SELECT DISTINCT ON (session_id) * FROM turns ORDER BY session_id, seq DESC) t
      WHERE t.session_id = s.id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions DROP COLUMN current_turn`);
    await q.query(`ALTER TABLE sessions DROP COLUMN pending_input_count`);
  }
}
