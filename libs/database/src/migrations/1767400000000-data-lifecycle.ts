import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Data lifecycle (issue 43): the clock that retention and session TTLs go by. `lifecycle_now()` is
 * the database's clock plus `lifecycle_clock.offset_s`, which only an administrator of a deployment
 * with LIFECYCLE_CLOCK_ADJUSTABLE=true may move (tests cross a grace period or a TTL without
 * waiting it out); the outbox's replay window goes by it too. Leases, idempotency receipts and every
 * other time keep the database's own clock.
 */
export class DataLifecycle1767400000000 implements MigrationInterface {
  name = 'DataLifecycle1767400000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE lifecycle_clock (id smallint PRIMARY KEY CHECK (id = 1), offset_s bigint NOT NULL DEFAULT 0)`);
    await q.query(`INSERT INTO lifecycle_clock (id, offset_s) VALUES (1, 0)`);
    await q.query(`CREATE FUNCTION lifecycle_now() RETURNS timestamptz LANGUAGE sql STABLE
      AS $$ SELECT now() + make_interval(secs => coalesce((SELECT offset_s FROM lifecycle_clock WHERE id = 1), 0)) $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS lifecycle_now()`);
    await q.query(`DROP TABLE IF EXISTS lifecycle_clock`);
  }
}
