import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Sessions' environments. A workspace is a workdir's (a session's, or its project's: a tree and a
 * project share one; workdir ids name either, hence no foreign key on them). Its content is a
 * chain of immutable versions, each a manifest {path: [sha256, size, mode]} of blobs stored once in
 * the file storage under their hash: a version is cheap to point at (a fork of a session names
 * one) and nothing is copied to make one. `head_version_id` is the latest; commits serialise on the
 * workspace's row. `placed_file_ids` are the workdir's attachments already copied into it under
 * `attachments/` (each once: one the agent deleted stays deleted). `setup_state` says whether the first version (the environment's files, the
 * attachments and the setup commands' results) is still being made, and since when.
 * Artifacts are the files a call wrote, one immutable row each, soft-deleted by the API.
 */
export class Workspaces1766900000000 implements MigrationInterface {
  name = 'Workspaces1766900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE workspaces (
        workdir_id uuid PRIMARY KEY,
        owner_id uuid NOT NULL REFERENCES users (id),
        head_version_id uuid,
        setup_state varchar NOT NULL CHECK (setup_state IN ('running', 'done')),
        setup_claimed_at timestamptz NOT NULL DEFAULT now(),
        setup_output text,
        placed_file_ids text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (setup_state = 'running' OR head_version_id IS NOT NULL)
      )`);
    await q.query(`
      CREATE TABLE workspace_versions (
        id uuid PRIMARY KEY,
        workdir_id uuid NOT NULL REFERENCES workspaces (workdir_id) ON DELETE CASCADE,
        seq integer NOT NULL CHECK (seq >= 1),
        parent_id uuid REFERENCES workspace_versions (id),
        manifest jsonb NOT NULL CHECK (jsonb_typeof(manifest) = 'object'),
        files integer NOT NULL CHECK (files >= 0),
        bytes bigint NOT NULL CHECK (bytes >= 0),
        session_id uuid REFERENCES sessions (id) ON DELETE SET NULL,
        turn_id uuid REFERENCES turns (id),
        call_id varchar,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT workspace_versions_seq_unique UNIQUE (workdir_id, seq),
        CHECK ((seq = 1) = (parent_id IS NULL))
      )`);
    // A fork finds the workspace as of a turn by the versions that turn committed.
    await q.query(`CREATE INDEX workspace_versions_turn_idx ON workspace_versions (turn_id) WHERE turn_id IS NOT NULL`);
    await q.query(`ALTER TABLE workspaces ADD CONSTRAINT workspaces_head_fk FOREIGN KEY (head_version_id) REFERENCES workspace_versions (id)`);
    await q.query(`
      CREATE TABLE session_artifacts (
        id uuid PRIMARY KEY,
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        workdir_id uuid NOT NULL REFERENCES workspaces (workdir_id) ON DELETE CASCADE,
        version_id uuid NOT NULL REFERENCES workspace_versions (id) ON DELETE CASCADE,
        path text NOT NULL CHECK (path LIKE '/workspace/%'),
        sha256 char(64) NOT NULL,
        size_bytes bigint NOT NULL CHECK (size_bytes >= 0),
        turn_id uuid REFERENCES turns (id),
        created_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      )`);
    // The artifacts list: a session's live artifacts by id (time-ordered), optionally of one environment.
    await q.query(`CREATE INDEX session_artifacts_list_idx ON session_artifacts (session_id, id) WHERE deleted_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE session_artifacts`);
    await q.query(`ALTER TABLE workspaces DROP CONSTRAINT workspaces_head_fk`);
    await q.query(`DROP TABLE workspace_versions`);
    await q.query(`DROP TABLE workspaces`);
  }
}
