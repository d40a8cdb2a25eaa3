import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fork: a session that shares its source's history up to a finished turn by reference. Nothing of
 * the history is copied: the fork is one `sessions` row plus one `session_lineage` row per ancestor
 * (at most FORK_MAX_DEPTH), each naming an ancestor session and the inclusive item and turn seqs of
 * that ancestor's own rows the fork inherits. Every history read of a session is its own rows, then
 * each ancestor's rows up to its bound; seq ranges along a lineage never overlap (a fork's own
 * counters start at its bound), so the union ordered by seq is the history.
 *
 * No foreign keys from `session_lineage` or `sessions.forked_from_session_id` to `sessions`: a key
 * check would take `FOR KEY SHARE` on the source's row, which waits on the `FOR UPDATE` lock a
 * running turn holds on it, and a fork must never wait for its source's turn. No lineage row
 * dangles: a deleted session is purged (1767400100000-session-purge) only once no lineage row names
 * it as ancestor, and a fork's own lineage rows go with the fork's purge.
 *
 * The nullable columns have no default: catalogue-only changes, no table rewrite. The shape check
 * is added NOT VALID and validated separately (no long exclusive lock on a large table).
 */
export class Fork1767200000000 implements MigrationInterface {
  name = 'Fork1767200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions
      ADD COLUMN forked_from_session_id uuid,
      ADD COLUMN forked_from_turn_id uuid,
      ADD COLUMN fork_position varchar(6),
      ADD COLUMN fork_item_seq bigint,
      ADD COLUMN fork_turn_seq integer`);
    await q.query(`ALTER TABLE sessions ADD CONSTRAINT sessions_fork_shape CHECK (
      (forked_from_session_id IS NULL) = (forked_from_turn_id IS NULL)
      AND (forked_from_session_id IS NULL) = (fork_position IS NULL)
      AND (forked_from_session_id IS NULL) = (fork_item_seq IS NULL)
      AND (forked_from_session_id IS NULL) = (fork_turn_seq IS NULL)
      AND (fork_position IS NULL OR fork_position IN ('after', 'before'))
      AND (fork_item_seq IS NULL OR fork_item_seq >= 0)
      AND (fork_turn_seq IS NULL OR fork_turn_seq >= 0)
      AND (forked_from_session_id IS NULL OR depth = 0)) NOT VALID`);
    await q.query(`ALTER TABLE sessions VALIDATE CONSTRAINT sessions_fork_shape`);
    // The list filter `forked_from=`: partial, so the turn path's updates of other sessions never maintain it.
    await q.query(`CREATE INDEX sessions_forks_idx ON sessions (forked_from_session_id, created_at, id) WHERE forked_from_session_id IS NOT NULL`);

    await q.query(`CREATE TABLE session_lineage (
      session_id uuid NOT NULL,
      -- 1: the nearest ancestor; its bounds are the highest
      depth smallint NOT NULL CHECK (depth >= 1),
      ancestor_id uuid NOT NULL,
      -- inclusive bounds on the ancestor's own item and turn seqs the fork inherits
      upto_item_seq bigint NOT NULL CHECK (upto_item_seq >= 0),
      upto_turn_seq integer NOT NULL CHECK (upto_turn_seq >= 0),
      PRIMARY KEY (session_id, depth),
      CONSTRAINT session_lineage_not_self CHECK (ancestor_id <> session_id))`);
    // "Does a live session still inherit from S" (delete keeps S's files then) and "the forks of S".
    await q.query(`CREATE INDEX session_lineage_ancestor_idx ON session_lineage (ancestor_id)`);

    // The workspace as of a fork point: the latest version of the workdir committed before the
    // point's turn ended (or started), one index probe read backwards from that time.
    await q.query(`CREATE INDEX workspace_versions_asof_idx ON workspace_versions (workdir_id, created_at, seq)`);
    // A fork's workspace starts at a version of its source's workdir; kept so that the version as of
    // a turn of a fork that had not written yet is that starting version.
    await q.query(`ALTER TABLE workspaces ADD COLUMN base_version_id uuid REFERENCES workspace_versions (id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE workspaces DROP COLUMN base_version_id`);
    await q.query(`DROP INDEX workspace_versions_asof_idx`);
    await q.query(`DROP TABLE session_lineage`);
    await q.query(`DROP INDEX sessions_forks_idx`);
    await q.query(`ALTER TABLE sessions DROP CONSTRAINT sessions_fork_shape`);
    await q.query(`ALTER TABLE sessions DROP COLUMN forked_from_session_id, DROP COLUMN forked_from_turn_id, DROP COLUMN fork_position, DROP COLUMN fork_item_seq, DROP COLUMN fork_turn_seq`);
  }
}
