import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The operator API's reads, each answered from a small partial index instead of a scan:
 * - the inbox of open waitpoints across sessions, newest first: by waitpoint id (a UUIDv7, so in
 *   creation order, and a cursor that stays valid when its waitpoint is answered meanwhile); only
 *   waiting turns are indexed;
 * - the takeovers of the last hour on the queues page (only interrupted runs are indexed);
 * - a step's completion time (`run_steps.completed_at`), so the timeline can show how long a tool
 *   call ran: a tool call's row is written `started` and completed by the same upsert, which kept
 *   no time of its own. Nullable with no default: adding it rewrites nothing, and older rows show
 *   no duration.
 */
export class OperatorReads1766020800000 implements MigrationInterface {
  name = 'OperatorReads1766020800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX turns_open_waitpoints_idx ON turns (((waitpoint->>'id')::uuid)) WHERE waitpoint IS NOT NULL`);
    await q.query(`CREATE INDEX runs_interrupted_idx ON runs (completed_at) WHERE status = 'interrupted'`);
    await q.query(`ALTER TABLE run_steps ADD COLUMN completed_at timestamptz`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE run_steps DROP COLUMN completed_at`);
    await q.query(`DROP INDEX runs_interrupted_idx`);
    await q.query(`DROP INDEX turns_open_waitpoints_idx`);
  }
}
