import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What sessions spend and what bounds it. `usage_ledger` has one row per model call (of a turn, a
 * compaction, an MCP sampling request), tool call and sandbox command, written in the transaction
 * of the step that made it (a takeover never counts twice, a crash never loses a count) with the
 * keys an integrator bills by copied onto it, and the price in force (a later price never rewrites
 * history). `usage_now()` is the clock of usage periods and report days: the database's, moved by
 * `usage_clock.offset_s` only where the deployment lets an administrator move it (tests of day and
 * month roll-overs); leases never read it. `budgets` bound the sums of the ledger over a scope and a
 * period; `budget_reservations` hold what calls in flight may still spend, so concurrent turns of
 * one scope cannot all pass the same remaining room.
 */
export class UsageAndBudgets1767000000000 implements MigrationInterface {
  name = 'UsageAndBudgets1767000000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE model_prices (
      model varchar(256) PRIMARY KEY,
      input_per_mtok_usd numeric(14, 6) NOT NULL CHECK (input_per_mtok_usd >= 0),
      output_per_mtok_usd numeric(14, 6) NOT NULL CHECK (output_per_mtok_usd >= 0),
      cached_input_per_mtok_usd numeric(14, 6) CHECK (cached_input_per_mtok_usd >= 0),
      reasoning_per_mtok_usd numeric(14, 6) CHECK (reasoning_per_mtok_usd >= 0),
      updated_at timestamptz NOT NULL DEFAULT now())`);

    await q.query(`CREATE TABLE usage_clock (id smallint PRIMARY KEY CHECK (id = 1), offset_s bigint NOT NULL DEFAULT 0)`);
    await q.query(`INSERT INTO usage_clock (id, offset_s) VALUES (1, 0)`);
    await q.query(`CREATE FUNCTION usage_now() RETURNS timestamptz LANGUAGE sql STABLE
      AS $$ SELECT now() + make_interval(secs => coalesce((SELECT offset_s FROM usage_clock WHERE id = 1), 0)) $$`);

    await q.query(`CREATE TABLE usage_ledger (
      id uuid PRIMARY KEY,
      at timestamptz NOT NULL,
      kind varchar(16) NOT NULL CHECK (kind IN ('model_call', 'compaction', 'sampling', 'tool_call', 'command')),
      session_id uuid NOT NULL,
      root_session_id uuid NOT NULL,
      turn_id uuid NOT NULL,
      run_id uuid NOT NULL,
      step_id uuid,
      agent_id varchar(256) NOT NULL,
      project_id varchar(256),
      owner_id uuid NOT NULL,
      account_id uuid NOT NULL,
      app_id varchar(128),
      end_user_id varchar(256),
      model varchar(256),
      tool varchar(256),
      input_tokens bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
      output_tokens bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
      cached_tokens bigint NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
      reasoning_tokens bigint NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
      model_calls smallint NOT NULL DEFAULT 0 CHECK (model_calls IN (0, 1)),
      tool_calls smallint NOT NULL DEFAULT 0 CHECK (tool_calls IN (0, 1)),
      wall_ms bigint NOT NULL DEFAULT 0 CHECK (wall_ms >= 0),
      cost_microusd bigint CHECK (cost_microusd >= 0),
      price jsonb,
      CHECK ((kind IN ('model_call', 'compaction', 'sampling')) = (model_calls = 1)),
      CHECK ((kind IN ('tool_call', 'command')) = (tool_calls = 1)))`);
    // Sums per session and per tree; reports and budgets per account, project, agent, app and over time.
    await q.query(`CREATE INDEX usage_ledger_session_idx ON usage_ledger (session_id, at)`);
    await q.query(`CREATE INDEX usage_ledger_root_idx ON usage_ledger (root_session_id, at)`);
    await q.query(`CREATE INDEX usage_ledger_account_idx ON usage_ledger (account_id, at)`);
    await q.query(`CREATE INDEX usage_ledger_project_idx ON usage_ledger (project_id, at) WHERE project_id IS NOT NULL`);
    await q.query(`CREATE INDEX usage_ledger_agent_idx ON usage_ledger (agent_id, at)`);
    await q.query(`CREATE INDEX usage_ledger_at_idx ON usage_ledger (at)`);
    await q.query(`CREATE UNIQUE INDEX usage_ledger_step_idx ON usage_ledger (step_id, kind) WHERE step_id IS NOT NULL`);

    await q.query(`CREATE TABLE budgets (
      id uuid PRIMARY KEY,
      account_id uuid NOT NULL,
      created_by uuid NOT NULL,
      scope_kind varchar(16) NOT NULL CHECK (scope_kind IN ('session', 'project', 'app', 'end_user', 'agent', 'user')),
      scope_id varchar(256) NOT NULL,
      app_id varchar(128),
      limits jsonb NOT NULL CHECK (jsonb_typeof(limits) = 'object'),
      period varchar(8) NOT NULL CHECK (period IN ('lifetime', 'day', 'month')),
      on_exceeded varchar(8) NOT NULL CHECK (on_exceeded IN ('pause', 'fail')),
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL)`);
    await q.query(`CREATE INDEX budgets_scope_idx ON budgets (scope_kind, scope_id)`);
    await q.query(`CREATE INDEX budgets_account_idx ON budgets (account_id, created_at, id)`);

    await q.query(`CREATE TABLE budget_reservations (
      run_id uuid NOT NULL,
      call_key varchar(200) NOT NULL,
      budget_ids uuid[] NOT NULL,
      tokens bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
      cost_microusd bigint NOT NULL DEFAULT 0 CHECK (cost_microusd >= 0),
      model_calls smallint NOT NULL DEFAULT 0,
      tool_calls smallint NOT NULL DEFAULT 0,
      turns smallint NOT NULL DEFAULT 0 CHECK (turns IN (0, 1)),
      expires_at timestamptz NOT NULL,
      PRIMARY KEY (run_id, call_key))`);
    await q.query(`CREATE INDEX budget_reservations_budgets_idx ON budget_reservations USING gin (budget_ids)`);

    await q.query(`ALTER TABLE turns DROP CONSTRAINT IF EXISTS turns_waitpoint_kind_check`);
    await q.query(`ALTER TABLE turns ADD CONSTRAINT turns_waitpoint_kind_check CHECK (waitpoint IS NULL OR waitpoint->>'kind' IN ('question', 'approval', 'client_tool', 'cooperation', 'budget'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE turns DROP CONSTRAINT IF EXISTS turns_waitpoint_kind_check`);
    await q.query(`ALTER TABLE turns ADD CONSTRAINT turns_waitpoint_kind_check CHECK (waitpoint IS NULL OR waitpoint->>'kind' IN ('question', 'approval', 'client_tool', 'cooperation'))`);
    for (const table of ['budget_reservations', 'budgets', 'usage_ledger']) await q.query(`DROP TABLE IF EXISTS ${table}`);
    await q.query(`DROP FUNCTION IF EXISTS usage_now()`);
    for (const table of ['usage_clock', 'model_prices']) await q.query(`DROP TABLE IF EXISTS ${table}`);
  }
}
