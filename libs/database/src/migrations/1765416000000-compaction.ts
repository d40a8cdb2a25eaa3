import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Context management (README "Context and compaction"). `items.tokens` is each item's size in the model's context,
 * counted when the worker writes it (null for items the api writes, a client's tool result, and
 * for items from before this migration: the worker counts those, in memory, as it builds a context), so a context is measured without re-reading the history.
 * The latest compaction of a session is found through a partial index, in one probe whatever the
 * session's length. A compaction is a committed step of its run (`run_steps.kind`). Agents carry
 * their `context` policy; a session may override the compaction mode for later inputs; a turn
 * keeps the size of the context its last model call was sent.
 */
export class Compaction1765416000000 implements MigrationInterface {
  name = 'Compaction1765416000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE items ADD COLUMN tokens integer CHECK (tokens >= 0)`);
    await q.query(`CREATE INDEX items_compactions_idx ON items (session_id, seq) WHERE type = 'compaction'`);
    await q.query(`ALTER TABLE run_steps DROP CONSTRAINT IF EXISTS run_steps_kind_check`);
    await q.query(`ALTER TABLE run_steps ADD CONSTRAINT run_steps_kind_check CHECK (kind IN ('model_call', 'tool_call', 'waitpoint', 'compaction'))`);
    await q.query(`ALTER TABLE agents ADD COLUMN context jsonb NOT NULL DEFAULT '{}'`);
    await q.query(`ALTER TABLE sessions ADD COLUMN compaction_mode varchar(8) CHECK (compaction_mode IN ('auto', 'manual', 'off'))`);
    await q.query(`ALTER TABLE turns ADD COLUMN context jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE turns DROP COLUMN context`);
    await q.query(`ALTER TABLE sessions DROP COLUMN compaction_mode`);
    await q.query(`ALTER TABLE agents DROP COLUMN context`);
    await q.query(`DELETE FROM run_steps WHERE kind = 'compaction'`);
    await q.query(`ALTER TABLE run_steps DROP CONSTRAINT run_steps_kind_check`);
    await q.query(`ALTER TABLE run_steps ADD CONSTRAINT run_steps_kind_check CHECK (kind IN ('model_call', 'tool_call', 'waitpoint'))`);
    await q.query(`DROP INDEX items_compactions_idx`);
    await q.query(`ALTER TABLE items DROP COLUMN tokens`);
  }
}
