import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Cooperation trees (README "Cooperation: subagents and trees"). A member is a session: it names its parent, its tree's root (a
 * root names itself) and its depth, and the spawning call (turn, call) it came from, unique, so a
 * retried or taken-over `create_subagent` meets the member it already made. The root row is the
 * tree: it carries the tree's cap on running members and when the tree was stopped.
 *
 * `cooperation_signals` is a cross-session outbox: a member's turn that ends writes its signal in
 * its own transaction (under the member's lock only, never the parent's: locks go parent before
 * child), and the parent's side delivers it under the parent's lock — after commit at once, or by
 * the recovery sweep when that nudge was lost. One per (member, turn); a member that settles
 * without a turn ending (its last queued input cancelled, its queue paused) leaves one without a turn. No foreign keys on it: a
 * key check would take a share lock on the parent's row from the member's transaction, the very
 * upward lock the lock order forbids (it deadlocks against a coordinator locking parent, then member).
 */
export class Cooperation1765588800000 implements MigrationInterface {
  name = 'Cooperation1765588800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE sessions
      ADD COLUMN parent_session_id uuid REFERENCES sessions (id),
      ADD COLUMN root_session_id uuid,
      ADD COLUMN depth smallint NOT NULL DEFAULT 0 CHECK (depth >= 0),
      ADD COLUMN spawned_turn_id uuid,
      ADD COLUMN spawned_call_id varchar(128),
      ADD COLUMN subagent jsonb,
      ADD COLUMN tree_max_concurrent smallint CHECK (tree_max_concurrent BETWEEN 1 AND 20),
      ADD COLUMN tree_stopped_at timestamptz`);
    await q.query(`UPDATE sessions SET root_session_id = id`);
    await q.query(`ALTER TABLE sessions ALTER COLUMN root_session_id SET NOT NULL`);
    await q.query(`ALTER TABLE sessions ADD CONSTRAINT sessions_tree_links_check CHECK (
      (depth = 0) = (parent_session_id IS NULL)
      AND (depth = 0) = (root_session_id = id)
      AND (depth = 0) = (spawned_turn_id IS NULL)
      AND (spawned_turn_id IS NULL) = (spawned_call_id IS NULL))`);
    // Partial: root sessions (nearly every row) are not in it, so their frequent updates never maintain it.
    await q.query(`CREATE UNIQUE INDEX sessions_spawned_by_key ON sessions (spawned_turn_id, spawned_call_id) WHERE spawned_turn_id IS NOT NULL`);
    await q.query(`CREATE INDEX sessions_tree_idx ON sessions (root_session_id, depth, id) WHERE depth > 0`);
    await q.query(`CREATE INDEX sessions_children_idx ON sessions (parent_session_id, created_at, id) WHERE parent_session_id IS NOT NULL`);
    await q.query(`CREATE TABLE cooperation_signals (
      id bigserial PRIMARY KEY,
      parent_session_id uuid NOT NULL,
      member_session_id uuid NOT NULL,
      turn_id uuid,
      status varchar(16) NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      delivered_at timestamptz)`);
    await q.query(`CREATE UNIQUE INDEX cooperation_signals_turn_key ON cooperation_signals (member_session_id, turn_id) WHERE turn_id IS NOT NULL`);
    await q.query(`CREATE INDEX cooperation_signals_undelivered_idx ON cooperation_signals (parent_session_id, id) WHERE delivered_at IS NULL`);
    await q.query(`ALTER TABLE agents ADD COLUMN multi_agent jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents DROP COLUMN multi_agent`);
    await q.query(`DROP TABLE cooperation_signals`);
    await q.query(`DELETE FROM sessions WHERE depth > 0`);
    await q.query(`DROP INDEX sessions_spawned_by_key`);
    await q.query(`ALTER TABLE sessions DROP CONSTRAINT sessions_tree_links_check,
      DROP COLUMN parent_session_id, DROP COLUMN root_session_id, DROP COLUMN depth, DROP COLUMN spawned_turn_id, DROP COLUMN spawned_call_id,
      DROP COLUMN subagent, DROP COLUMN tree_max_concurrent, DROP COLUMN tree_stopped_at`);
  }
}
