import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The agent runtime: saved agents carry tools, limits, visibility and a version; a session keeps
 * the agent snapshot it was created with (and the tools the user trusted for its lifetime); a run
 * can stop at a waitpoint; tool calls are committed steps with one row per call (`ref` = call id),
 * started before a non-idempotent side effect and completed with its result, so a takeover never
 * runs a stored call again.
 */
export class AgentRuntime1764979200000 implements MigrationInterface {
  name = 'AgentRuntime1764979200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE agents DROP CONSTRAINT IF EXISTS agents_tool_approval_mode_check`);
    await q.query(`UPDATE agents SET tool_approval_mode = 'default' WHERE tool_approval_mode = 'ask'`);
    await q.query(`ALTER TABLE agents ALTER COLUMN tool_approval_mode SET DEFAULT 'default'`);
    await q.query(`ALTER TABLE agents ADD CONSTRAINT agents_tool_approval_mode_check CHECK (tool_approval_mode IN ('default', 'always_ask', 'always_trust'))`);
    await q.query(`ALTER TABLE agents ADD COLUMN tools jsonb NOT NULL DEFAULT '[]'`);
    await q.query(`ALTER TABLE agents ADD COLUMN limits jsonb NOT NULL DEFAULT '{}'`);
    await q.query(`ALTER TABLE agents ADD COLUMN visibility varchar(16) NOT NULL DEFAULT 'public' CHECK (visibility IN ('public', 'private'))`);
    await q.query(`ALTER TABLE agents ADD COLUMN version integer NOT NULL DEFAULT 1 CHECK (version > 0)`);
    // Sessions reference their agent: a deleted agent is hidden, its row (and version count) kept.
    await q.query(`ALTER TABLE agents ADD COLUMN deleted_at timestamptz`);
    // A private agent has an owner; a public one has none (agents that had an owner were already private).
    await q.query(`UPDATE agents SET visibility = 'private' WHERE owner_id IS NOT NULL`);
    await q.query(`ALTER TABLE agents ADD CONSTRAINT agents_private_has_owner CHECK ((visibility = 'private') = (owner_id IS NOT NULL))`);
    // The built-in agent can ask the user and use the safe builtins out of the box ([[ask:…]], [[tool:calculator …]]).
    await q.query(`
      UPDATE agents SET tools = '[{"type":"builtin","name":"ask_user"},{"type":"builtin","name":"calculator"},{"type":"builtin","name":"current_time"}]'
      WHERE id = 'default-chatbot' AND tools = '[]'`);

    await q.query(`UPDATE sessions SET tool_approval_mode = 'default' WHERE tool_approval_mode = 'ask'`);
    await q.query(`ALTER TABLE sessions ADD COLUMN agent_snapshot jsonb`);
    await q.query(`ALTER TABLE sessions ADD COLUMN trusted_tools text[] NOT NULL DEFAULT '{}'`);

    await q.query(`ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_status_check`);
    await q.query(`
      ALTER TABLE runs ADD CONSTRAINT runs_status_check
      CHECK (status IN ('queued', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled', 'yielded', 'interrupted'))`);

    await q.query(`ALTER TABLE run_steps DROP CONSTRAINT IF EXISTS run_steps_status_check`);
    await q.query(`ALTER TABLE run_steps ADD CONSTRAINT run_steps_status_check CHECK (status IN ('started', 'completed', 'failed'))`);
    await q.query(`ALTER TABLE run_steps ADD COLUMN ref varchar(128)`);
    // One tool result per call, one response per waitpoint: a duplicate is refused by the database.
    await q.query(`CREATE UNIQUE INDEX run_steps_one_per_ref ON run_steps (turn_id, kind, ref) WHERE ref IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX run_steps_one_per_ref`);
    await q.query(`ALTER TABLE run_steps DROP COLUMN ref`);
    await q.query(`ALTER TABLE run_steps DROP CONSTRAINT run_steps_status_check`);
    await q.query(`ALTER TABLE run_steps ADD CONSTRAINT run_steps_status_check CHECK (status IN ('completed', 'failed'))`);
    await q.query(`ALTER TABLE runs DROP CONSTRAINT runs_status_check`);
    await q.query(`
      ALTER TABLE runs ADD CONSTRAINT runs_status_check
      CHECK (status IN ('queued', 'in_progress', 'completed', 'failed', 'cancelled', 'yielded', 'interrupted'))`);
    await q.query(`ALTER TABLE sessions DROP COLUMN trusted_tools`);
    await q.query(`ALTER TABLE sessions DROP COLUMN agent_snapshot`);
    await q.query(`ALTER TABLE agents DROP CONSTRAINT agents_private_has_owner`);
    for (const column of ['deleted_at', 'version', 'visibility', 'limits', 'tools']) await q.query(`ALTER TABLE agents DROP COLUMN ${column}`);
    await q.query(`ALTER TABLE agents DROP CONSTRAINT agents_tool_approval_mode_check`);
    await q.query(`UPDATE agents SET tool_approval_mode = 'ask' WHERE tool_approval_mode <> 'always_trust'`);
    await q.query(`ALTER TABLE agents ADD CONSTRAINT agents_tool_approval_mode_check CHECK (tool_approval_mode IN ('ask', 'always_trust'))`);
  }
}
