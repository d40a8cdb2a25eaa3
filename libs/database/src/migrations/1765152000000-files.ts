import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Files and attachments. A `files` row is the metadata of one stored file: uploaded as a draft
 * (owner-scoped, expiring), bound to one session input by a submission, then prepared into the
 * session's workdir (`ready`). `uploading` and `deleting` are the two in-between states that make
 * the blob and the row consistent across crashes: the row is written before the blob and
 * tombstoned before the blob is removed, so the sweep always knows what to clean up.
 * Inputs get their attachment state: an input whose files are not in the workdir yet is
 * `preparing` and is never claimed.
 */
export class Files1765152000000 implements MigrationInterface {
  name = 'Files1765152000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE files (
        id char(32) PRIMARY KEY,
        owner_id uuid NOT NULL REFERENCES users (id),
        filename varchar(255) NOT NULL,
        bytes integer NOT NULL CHECK (bytes > 0),
        mime_type varchar(100) NOT NULL,
        sha256 char(64) NOT NULL,
        status varchar(16) NOT NULL CHECK (status IN ('uploading', 'draft', 'bound', 'ready', 'deleting')),
        draft_key varchar(255),
        session_key varchar(255),
        session_id uuid REFERENCES sessions (id),
        input_id uuid REFERENCES inputs (id),
        message_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz,
        bound_at timestamptz,
        ready_at timestamptz,
        CONSTRAINT files_draft_shape CHECK (status <> 'draft' OR (session_id IS NULL AND expires_at IS NOT NULL AND draft_key IS NOT NULL)),
        CONSTRAINT files_bound_shape CHECK (status <> 'bound' OR (session_id IS NOT NULL AND input_id IS NOT NULL AND draft_key IS NOT NULL AND session_key IS NOT NULL)),
        CONSTRAINT files_ready_shape CHECK (status <> 'ready' OR (session_id IS NOT NULL AND session_key IS NOT NULL AND ready_at IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX files_owner_idx ON files (owner_id)`);
    await q.query(`CREATE INDEX files_draft_expiry_idx ON files (expires_at) WHERE status = 'draft'`);
    await q.query(`CREATE INDEX files_cleanup_idx ON files (created_at) WHERE status IN ('uploading', 'deleting') OR (status = 'ready' AND draft_key IS NOT NULL)`);
    await q.query(`CREATE INDEX files_session_idx ON files (session_id, bound_at, id) WHERE session_id IS NOT NULL`);
    await q.query(`CREATE INDEX files_input_idx ON files (input_id) WHERE input_id IS NOT NULL`);
    await q.query(`CREATE INDEX files_message_idx ON files (message_id) WHERE message_id IS NOT NULL`);

    await q.query(`ALTER TABLE inputs ADD COLUMN attachment_status varchar(16) NOT NULL DEFAULT 'ready' CHECK (attachment_status IN ('preparing', 'ready'))`);
    await q.query(`ALTER TABLE inputs ADD COLUMN attachment_error text`);
    // An input runs only once its files are in the workdir.
    await q.query(`ALTER TABLE inputs ADD CONSTRAINT inputs_consumed_ready CHECK (status <> 'consumed' OR attachment_status = 'ready')`);
    await q.query(`CREATE INDEX inputs_preparing_idx ON inputs (received_at) WHERE attachment_status = 'preparing'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX inputs_preparing_idx`);
    await q.query(`ALTER TABLE inputs DROP CONSTRAINT inputs_consumed_ready`);
    await q.query(`ALTER TABLE inputs DROP COLUMN attachment_error`);
    await q.query(`ALTER TABLE inputs DROP COLUMN attachment_status`);
    await q.query(`DROP TABLE files`);
  }
}
