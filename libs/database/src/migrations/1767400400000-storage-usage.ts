import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Storage accounting (issue 43): what each session stores as last measured (`storage_usage`, one
 * row a session, refreshed by the worker for sessions active since), and its owner's and its
 * projects' totals (`storage_totals`), summed from those rows by the worker so that an operator's
 * list, a project's total and the quota check each read one indexed row, never an owner's
 * sessions or their rows. `project_id` '' is the owner's whole total.
 *
 * A session's row goes with the session (ON DELETE CASCADE: a purge removes it); the totals of its
 * owner are summed again by the worker within a few ticks (it re-sums the stalest totals each run).
 * Sessions that exist when this runs are queued for a first measurement (`stale_since`).
 */
export class StorageUsage1767400400000 implements MigrationInterface {
  name = 'StorageUsage1767400400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE storage_usage (
        session_id uuid PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        owner_id uuid NOT NULL,
        project_id varchar(128),
        bytes bigint NOT NULL DEFAULT 0,
        rows bigint NOT NULL DEFAULT 0,
        measured_at timestamptz,
        -- Queued for measurement since (null: measured since its last activity); marked_at: its latest mark.
        stale_since timestamptz,
        marked_at timestamptz
      )`);
    // An owner's (and a project's) sums read only this index.
    await q.query(`CREATE INDEX storage_usage_owner_idx ON storage_usage (owner_id, project_id) INCLUDE (bytes, rows, measured_at)`);
    await q.query(`CREATE INDEX storage_usage_stale_idx ON storage_usage (stale_since) WHERE stale_since IS NOT NULL`);
    await q.query(`
      CREATE TABLE storage_totals (
        owner_id uuid NOT NULL,
        project_id varchar(128) NOT NULL,
        bytes bigint NOT NULL,
        rows bigint NOT NULL,
        sessions integer NOT NULL,
        measured_at timestamptz,
        summed_at timestamptz NOT NULL,
        PRIMARY KEY (owner_id, project_id)
      )`);
    await q.query(`CREATE INDEX storage_totals_owners_idx ON storage_totals (bytes DESC, owner_id) WHERE project_id = ''`);
    await q.query(`CREATE INDEX storage_totals_projects_idx ON storage_totals (bytes DESC, owner_id, project_id) WHERE project_id <> ''`);
    await q.query(`CREATE INDEX storage_totals_summed_idx ON storage_totals (summed_at) WHERE project_id = ''`);
    // How far the accounting has read the outbox for active sessions; one row, advanced by one worker at a time.
    await q.query(`CREATE TABLE storage_accounting_state (id smallint PRIMARY KEY CHECK (id = 1), accounted_until timestamptz NOT NULL)`);
    await q.query(`INSERT INTO storage_accounting_state (id, accounted_until) VALUES (1, now())`);
    await q.query(`INSERT INTO storage_usage (session_id, owner_id, project_id, stale_since, marked_at) SELECT id, owner_id, project_id, now(), now() FROM sessions`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS storage_accounting_state`);
    await q.query(`DROP TABLE IF EXISTS storage_totals`);
    await q.query(`DROP TABLE IF EXISTS storage_usage`);
  }
}
