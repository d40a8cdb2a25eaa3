import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Storage totals kept by deltas (review of issue 43): a measurement adds what changed in one
 * session's usage row to its owner's totals, instead of summing all of the owner's rows again.
 *
 * `storage_usage.counted`: whether the row's bytes and rows are in `storage_totals` (a row is
 * counted once measured, and no longer once its session is deleted: a deleted session's storage
 * stops counting towards the quota at the accounting pass after the delete, before its purge).
 * Rows that exist were summed into the totals as they are, so they start counted; new rows start
 * uncounted. Deleted sessions' rows are queued so that the next pass takes them out.
 *
 * `storage_totals.resummed_at`: the last full re-sum of an owner's totals from its rows, a slow
 * correction of a few owners per batch (null: never, first in line).
 *
 * The keyset indexes match the list's order (every key descending), so a page is an index walk
 * with no sort.
 */
export class StorageTotalsDeltas1767400410000 implements MigrationInterface {
  name = 'StorageTotalsDeltas1767400410000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE storage_usage ADD COLUMN counted boolean NOT NULL DEFAULT true`);
    await q.query(`ALTER TABLE storage_usage ALTER COLUMN counted SET DEFAULT false`);
    await q.query(`UPDATE storage_usage u SET stale_since = coalesce(u.stale_since, now()), marked_at = now() FROM sessions s WHERE s.id = u.session_id AND s.deleted_at IS NOT NULL`);
    await q.query(`ALTER TABLE storage_totals ADD COLUMN resummed_at timestamptz`);
    await q.query(`DROP INDEX storage_totals_summed_idx`);
    await q.query(`CREATE INDEX storage_totals_resummed_idx ON storage_totals (resummed_at NULLS FIRST) WHERE project_id = ''`);
    await q.query(`DROP INDEX storage_totals_owners_idx`);
    await q.query(`DROP INDEX storage_totals_projects_idx`);
    await q.query(`CREATE INDEX storage_totals_owners_idx ON storage_totals (bytes DESC, owner_id DESC) WHERE project_id = ''`);
    await q.query(`CREATE INDEX storage_totals_projects_idx ON storage_totals (bytes DESC, owner_id DESC, project_id DESC) WHERE project_id <> ''`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX storage_totals_projects_idx`);
    await q.query(`DROP INDEX storage_totals_owners_idx`);
    await q.query(`CREATE INDEX storage_totals_owners_idx ON storage_totals (bytes DESC, owner_id) WHERE project_id = ''`);
    await q.query(`CREATE INDEX storage_totals_projects_idx ON storage_totals (bytes DESC, owner_id, project_id) WHERE project_id <> ''`);
    await q.query(`DROP INDEX storage_totals_resummed_idx`);
    await q.query(`CREATE INDEX storage_totals_summed_idx ON storage_totals (summed_at) WHERE project_id = ''`);
    await q.query(`ALTER TABLE storage_totals DROP COLUMN resummed_at`);
    await q.query(`ALTER TABLE storage_usage DROP COLUMN counted`);
  }
}
