import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Images a tool result returned (an MCP server's screenshot or chart) become files of the session's
 * workdir, origin `tool`: staged as `uploading` (row before blob, as uploads are), `ready` in the
 * transaction that records the result, and sharing the tombstone path (`deleting`) and the sweep.
 * They have no input (a tool, not a submission, brought them): the `ready` shape asks for none.
 */
export class ToolFiles1766366400000 implements MigrationInterface {
  name = 'ToolFiles1766366400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_origin_check`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_origin_check CHECK (origin IN ('upload', 'inline', 'tool'))`);
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_origin_status`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_origin_status CHECK (
      (origin = 'upload' AND status <> 'inline') OR (origin = 'inline' AND status IN ('uploading', 'inline', 'deleting'))
      OR (origin = 'tool' AND status IN ('uploading', 'ready', 'deleting')))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM files WHERE origin = 'tool'`);
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_origin_status`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_origin_status CHECK (
      (origin = 'upload' AND status <> 'inline') OR (origin = 'inline' AND status IN ('uploading', 'inline', 'deleting')))`);
    await q.query(`ALTER TABLE files DROP CONSTRAINT files_origin_check`);
    await q.query(`ALTER TABLE files ADD CONSTRAINT files_origin_check CHECK (origin IN ('upload', 'inline'))`);
  }
}
