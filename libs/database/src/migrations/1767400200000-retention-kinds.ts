import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The indexes the retention tasks of these kinds go by (oldest first: a batch is one index range, an idle probe one entry). */
const INDEXES = [
  // model_requests by age: only `(run_id, seq)` and the session were indexed. One more entry per
  // recorded request (MODEL_REQUEST_AUDIT=on only: an empty table keeps an empty index).
  { name: 'model_requests_created_idx', on: 'model_requests (created_at)' },
  // Delivered (consumed) signals by when they were: the only ones retention removes. Undelivered
  // ones are not in it; delivery sets delivered_at, which the undelivered index's predicate already
  // names, so that update was never HOT: the entry costs no HOT update.
  { name: 'cooperation_signals_delivered_idx', on: 'cooperation_signals (delivered_at) WHERE delivered_at IS NOT NULL' },
];

/**
 * Retention of model requests and cooperation signals (issue 43): the age indexes their tasks read.
 * audit_log needs none: `audit_log_page_idx (created_at, id)` is its age order already.
 */
export class RetentionKinds1767400200000 implements MigrationInterface {
  name = 'RetentionKinds1767400200000';
  // Built CONCURRENTLY, outside a transaction: a plain CREATE INDEX would block the workers'
  // step commits (model requests) and member endings (signals) while it builds.
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) {
      // An interrupted concurrent build leaves an INVALID index that IF NOT EXISTS would keep.
      await q.query(
        `DO $$ BEGIN
           IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                      WHERE c.relname = '${index.name}' AND c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid) THEN
             DROP INDEX ${index.name};
           END IF;
         END $$`,
      );
      await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${index.name} ON ${index.on}`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const index of INDEXES) await q.query(`DROP INDEX CONCURRENTLY IF EXISTS ${index.name}`);
  }
}
