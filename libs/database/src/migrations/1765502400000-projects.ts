import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Projects and the shared workdir. A project is an owner-scoped, soft-deleted resource; its
 * sessions share one workdir. The workdir is a column of the session (`workdir_id`) rather than a
 * lookup through the project, so that other groupings (a cooperation tree sharing its root's
 * workdir) reuse it: a session without a project is its own workdir (`workdir_id = id`), a session
 * of a project has the project's id. A file bound to a session takes the session's workdir when it
 * is bound; the file tools list and read the ready files of the workdir.
 * `sessions.project_id` keeps its type: rows from before this migration hold free labels.
 */
export class Projects1765502400000 implements MigrationInterface {
  name = 'Projects1765502400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE projects (
        id uuid PRIMARY KEY,
        owner_id uuid NOT NULL REFERENCES users (id),
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      )`);
    await q.query(`CREATE INDEX projects_owner_page_idx ON projects (owner_id, created_at, id) WHERE deleted_at IS NULL`);

    await q.query(`ALTER TABLE sessions ADD COLUMN workdir_id uuid`);
    await q.query(`UPDATE sessions SET workdir_id = id`);
    await q.query(`ALTER TABLE sessions ALTER COLUMN workdir_id SET NOT NULL`);

    // Files not bound to a session (drafts, uploads in progress) have no workdir yet.
    await q.query(`ALTER TABLE files ADD COLUMN workdir_id uuid`);
    await q.query(`UPDATE files f SET workdir_id = s.workdir_id FROM sessions s WHERE s.id = f.session_id`);
    // What the file tools list: the ready files of a workdir, in bound order.
    await q.query(`CREATE INDEX files_workdir_ready_idx ON files (workdir_id, bound_at, id) WHERE status = 'ready'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX files_workdir_ready_idx`);
    await q.query(`ALTER TABLE files DROP COLUMN workdir_id`);
    await q.query(`ALTER TABLE sessions DROP COLUMN workdir_id`);
    await q.query(`DROP TABLE projects`);
  }
}
