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
 *   (every turn updates its session) never maintain it. `purge_held_at` takes a due session out of
 *   it: the time it is looked at again (at once for one whose batch moved nothing, its last rows
 *   waiting for the files sweep or a project's attachments; an hour on for one whose purge failed
 *   alone; a day on for a source a fork's lineage still names, unpinned as soon as that fork's
 *   lineage goes), read after the fresh ones in the held index, never walked past again and again.
 * - the keys checked when a turn is deleted: session_artifacts (turn_id). runs (turn_id) and
 *   run_steps (turn_id) need none: their UNIQUE (turn_id, seq) indexes lead with it; nor
 *   model_requests (run_id), by UNIQUE (run_id, seq); nor items, by items_turn_idx and items_run_idx.
 * - the keys checked when a session is deleted: workspace_versions (session_id) (ON DELETE SET
 *   NULL), session_artifacts (session_id) (the list and per-turn-path indexes are partial on live
 *   artifacts; a soft-deleted one still names its session).
 * - the keys checked when a workspace's versions go: their parents, heads, bases and artifacts
 *   (no index led with any of these).
 * - cooperation_signals by member: the unique (member_session_id, turn_id) is partial on signals
 *   with a turn, and a member's "settled" signals have none. Only cooperation writes this table,
 *   never an echo turn.
 * No index is added to a table an echo turn writes, and every foreign key stays.
 */
export class SessionPurge1767400100000 implements MigrationInterface {
  name = 'SessionPurge1767400100000';

  async up(q: QueryRunner): Promise<void> {
    // Nullable, no default: a catalogue-only change.
    await q.query(`ALTER TABLE sessions ADD COLUMN purge_held_at timestamptz`);
    await q.query(`CREATE INDEX sessions_purge_due_idx ON sessions (deleted_at, id) WHERE deleted_at IS NOT NULL AND purge_held_at IS NULL`);
    await q.query(`CREATE INDEX sessions_purge_held_idx ON sessions (purge_held_at, id) WHERE purge_held_at IS NOT NULL`);
    await q.query(`CREATE INDEX session_artifacts_session_idx ON session_artifacts (session_id)`);
    await q.query(`CREATE INDEX session_artifacts_turn_idx ON session_artifacts (turn_id) WHERE turn_id IS NOT NULL`);
    await q.query(`CREATE INDEX session_artifacts_version_idx ON session_artifacts (version_id)`);
    await q.query(`CREATE INDEX workspace_versions_session_idx ON workspace_versions (session_id) WHERE session_id IS NOT NULL`);
    await q.query(`CREATE INDEX workspace_versions_parent_idx ON workspace_versions (parent_id) WHERE parent_id IS NOT NULL`);
    await q.query(`CREATE INDEX workspaces_head_idx ON workspaces (head_version_id) WHERE head_version_id IS NOT NULL`);
    await q.query(`CREATE INDEX workspaces_base_idx ON workspaces (base_version_id) WHERE base_version_id IS NOT NULL`);
    await q.query(`CREATE INDEX cooperation_signals_member_idx ON cooperation_signals (member_session_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const index of [
      'cooperation_signals_member_idx',
      'workspaces_base_idx',
      'workspaces_head_idx',
      'workspace_versions_parent_idx',
      'workspace_versions_session_idx',
      'session_artifacts_version_idx',
      'session_artifacts_turn_idx',
      'session_artifacts_session_idx',
      'sessions_purge_held_idx',
      'sessions_purge_due_idx',
    ]) {
      await q.query(`DROP INDEX IF EXISTS ${index}`);
    }
    await q.query(`ALTER TABLE sessions DROP COLUMN purge_held_at`);
  }
}
