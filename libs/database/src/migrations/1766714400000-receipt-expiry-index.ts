import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Receipts expire by their own `expires_at` (the TTL of the api replica that wrote each one), not
 * by their age against the sweeping worker's TTL: a worker with a shorter TTL than the api deleted
 * receipts that still had to answer retries. The sweep finds expired receipts through this index,
 * in bounded batches whatever the mix of TTLs; it costs one index entry per receipt written.
 */
export class ReceiptExpiryIndex1766714400000 implements MigrationInterface {
  name = 'ReceiptExpiryIndex1766714400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS idempotency_receipts_expiry_idx ON idempotency_receipts (expires_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS idempotency_receipts_expiry_idx`);
  }
}
