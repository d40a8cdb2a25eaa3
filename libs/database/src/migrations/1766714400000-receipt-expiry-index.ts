import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Receipts expire by their own `expires_at` (the TTL of the api replica that wrote each one), not
 * by their age against the sweeping worker's TTL: a worker with a shorter TTL than the api deleted
 * receipts that still had to answer retries. The sweep finds expired receipts through this index,
 * in bounded batches whatever the mix of TTLs; it costs one index entry per receipt written.
 */
export class ReceiptExpiryIndex1766714400000 implements MigrationInterface {
  name = 'ReceiptExpiryIndex1766714400000';
  // Built CONCURRENTLY, outside a transaction: a plain CREATE INDEX holds a lock that blocks every
  // receipt insert (every idempotent POST) of the replicas still serving while it builds.
  transaction = false;

  async up(q: QueryRunner): Promise<void> {
    // An interrupted concurrent build leaves an INVALID index that IF NOT EXISTS would keep.
    await q.query(
      `DO $$ BEGIN
         IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                    WHERE c.relname = 'idempotency_receipts_expiry_idx' AND c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid) THEN
           DROP INDEX idempotency_receipts_expiry_idx;
         END IF;
       END $$`,
    );
    await q.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_receipts_expiry_idx ON idempotency_receipts (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX CONCURRENTLY IF EXISTS idempotency_receipts_expiry_idx`);
  }
}
