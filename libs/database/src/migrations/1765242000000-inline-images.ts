import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Inline images (`input_image` data URLs) become session files: stored once when their submission
 * is accepted and referred to by id in inputs, items and events, so the event stream stays small.
 * `origin` tells them from uploaded files; their own status `inline` keeps them out of every query
 * about drafts and attachments (those select `draft`, `bound` or `ready`). An inline image is staged
 * as `uploading` (row before blob, as uploads are), becomes `inline` in the accepting transaction,
 * and shares the tombstone path (`deleting`) and the sweep with uploads.
 */
export class InlineImages1765242000000 implements MigrationInterface {
  name = 'InlineImages1765242000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE files ADD COLUMN origin varchar(16) NOT NULL DEFAULT 'upload' CHECK (origin IN ('upload', 'inline'))`);
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_status_check`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_status_check CHECK (status IN ('uploading', 'draft', 'bound', 'ready', 'inline', 'deleting'))`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_origin_status CHECK (
      (origin = 'upload' AND status <> 'inline') OR (origin = 'inline' AND status IN ('uploading', 'inline', 'deleting')))`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_inline_shape CHECK (
      status <> 'inline' OR (session_id IS NOT NULL AND input_id IS NOT NULL AND session_key IS NOT NULL AND ready_at IS NOT NULL))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM files WHERE origin = 'inline'`);
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_inline_shape`);
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_origin_status`);
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_status_check`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_status_check CHECK (status IN ('uploading', 'draft', 'bound', 'ready', 'deleting'))`);
    await q.query(`ALTER TABLE files DROP COLUMN origin`);
  }
}
