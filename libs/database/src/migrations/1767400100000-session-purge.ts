import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The purge of deleted sessions (issue 43, retention kind `deleted_sessions`): once
 * SESSION_PURGE_AFTER_S has passed since a session's delete (`sessions.deleted_at <
 * lifecycle_now() - grace`), the worker removes every row it owns, children first, its `sessions`
 * row last (libs/retention SessionPurge says the order and why).
 *
 * Sessions are now hard-deleted, so the reasoning of the fork migration (1767200000000: "no lineage
 * row can dangle" because nothing is ever removed) is replaced by this rule: a session that any
 * `session_lineage` row names as ancestor is never purged (a fork, deleted or not, still reads its
 * history by reference); purging a fork removes its own lineage rows, after which its source may
 * go. So a lineage row names an existing ancestor as long as its fork exists, still without a
 * foreign key (a key check would make a fork wait for its source's running turn).
 *
 * What the purge's statements need, each an index probe per session (or per row a foreign key
 * checks), never a scan of a large table:
 * - the due sessions, oldest first: partial on the deleted ones, so the live sessions' writes
 *   (every turn updates its session) never maintain it; `purge_held_at` marks a due session whose
 *   purge could not progress (its last rows wait for the files sweep, or a project's attachments
 *   still name it), looked at again after the fresh ones, so it never starves them.
 * - the keys checked when a turn is deleted: runs (turn_id) (the one index this adds to a table the
 *   echo turn writes: one entry per run); session_artifacts (turn_id).
 * - the keys checked when a session is deleted: workspace_versions (session_id) (ON DELETE SET
 *   NULL), session_artifacts (session_id) (the list index is partial on live artifacts).
 * - the keys checked when a workspace's versions go: their parents, heads, bases and artifacts.
 * - cooperation_signals by member (the unique index is partial on signals with a turn).
 * Two foreign keys are dropped instead of indexed: run_steps.turn_id and model_requests.run_id,
 * implied by keys the rows keep (run_steps.run_id → runs.turn_id, invariant run_step_matches_run;
 * model_requests.step_id → run_steps.run_id), both ON DELETE CASCADE. Indexing them would cost
 * every step's write; kept, every deleted turn or run would scan those tables. The rows still go
 * with their run (and a model request with its step) by the keys that remain.
 */
export class SessionPurge1767400100000 implements MigrationInterface {
  name = 'SessionPurge1767400100000';

  async up(q: QueryRunner): Promise<void> {
    // Nullable, no default: a catalogue-only change.
    await q.query(`ALTER TABLE sessions ADD COLUMN purge_held_at timestamptz`);
    await q.query(`CREATE INDEX sessions_purge_due_idx ON sessions (deleted_at, id) WHERE deleted_at IS NOT NULL AND purge_held_at IS NULL`);
    await q.query(`CREATE INDEX sessions_purge_held_idx ON sessions (purge_held_at, id) WHERE purge_held_at IS NOT NULL`);
    await q.query(`CREATE INDEX runs_turn_idx ON runs (turn_id)`);
    await q.query(`CREATE INDEX session_artifacts_session_idx ON session_artifacts (session_id)`);
    await q.query(`CREATE INDEX session_artifacts_turn_idx ON session_artifacts (turn_id) WHERE turn_id IS NOT NULL`);
    await q.query(`CREATE INDEX session_artifacts_version_idx ON session_artifacts (version_id)`);
    await q.query(`CREATE INDEX workspace_versions_session_idx ON workspace_versions (session_id) WHERE session_id IS NOT NULL`);
    await q.query(`CREATE INDEX workspace_versions_parent_idx ON workspace_versions (parent_id) WHERE parent_id IS NOT NULL`);
    await q.query(`CREATE INDEX workspaces_head_idx ON workspaces (head_version_id) WHERE head_version_id IS NOT NULL`);
    await q.query(`CREATE INDEX workspaces_base_idx ON workspaces (base_version_id) WHERE base_version_id IS NOT NULL`);
    await q.query(`CREATE INDEX cooperation_signals_member_idx ON cooperation_signals (member_session_id)`);
    await q.query(`ALTER TABLE run_steps DROP CONSTRAINT IF EXISTS run_steps_turn_id_fkey`);
    await q.query(`ALTER TABLE model_requests DROP CONSTRAINT IF EXISTS model_requests_run_id_fkey`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE model_requests ADD CONSTRAINT model_requests_run_id_fkey FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE`);
    await q.query(`ALTER TABLE run_steps ADD CONSTRAINT run_steps_turn_id_fkey FOREIGN KEY (turn_id) REFERENCES turns (id) ON DELETE CASCADE`);
    for (const index of [
      'cooperation_signals_member_idx',
      'workspaces_base_idx',
      'workspaces_head_idx',
      'workspace_versions_parent_idx',
      'workspace_versions_session_idx',
      'session_artifacts_version_idx',
      'session_artifacts_turn_idx',
      'session_artifacts_session_idx',
      'runs_turn_idx',
      'sessions_purge_held_idx',
      'sessions_purge_due_idx',
    ]) {
      await q.query(`DROP INDEX IF EXISTS ${index}`);
    }
    await q.query(`ALTER TABLE sessions DROP COLUMN purge_held_at`);
  }
}
