import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Automations: agents started by a clock. An automation fires each scheduled time at most once:
 * the invocation row of a scheduled time is unique on (automation, time) and is written in the
 * transaction that accepts its input, under the automation's row lock. `next_run_at` is the next
 * time to fire while the automation is active (timers and the sweep read it); it is null otherwise.
 */
export class Automations1767100000000 implements MigrationInterface {
  name = 'Automations1767100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE automations (
      id uuid PRIMARY KEY,
      owner_id uuid NOT NULL,
      -- the account AUTOMATION_MAX_PER_OWNER counts against: the owner, or for an app's end user the app's owner
      -- (so that end users named by X-End-User-Id cannot multiply the limit)
      account_id uuid NOT NULL,
      -- who the automation acts as when it fires: the creator's identity (user, key, app, end user, role, access)
      principal jsonb NOT NULL CHECK (jsonb_typeof(principal) = 'object'),
      name varchar(256) NOT NULL,
      type varchar(8) NOT NULL CHECK (type IN ('periodic', 'once')),
      expression varchar(256),
      timezone varchar(64),
      run_at timestamptz,
      target jsonb NOT NULL CHECK (jsonb_typeof(target) = 'object'),
      -- the existing session a target names (the list filter), the saved agent a new-session target starts
      target_session_id uuid,
      agent_id varchar(64),
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      overlap varchar(16) NOT NULL CHECK (overlap IN ('skip', 'queue', 'cancel_previous')),
      catch_up varchar(8) NOT NULL CHECK (catch_up IN ('none', 'latest', 'all')),
      status varchar(10) NOT NULL CHECK (status IN ('active', 'paused', 'completed')),
      pause_reason varchar(32),
      next_run_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CONSTRAINT automations_schedule_shape CHECK (
        (type = 'periodic' AND expression IS NOT NULL AND timezone IS NOT NULL AND run_at IS NULL)
        OR (type = 'once' AND expression IS NULL AND timezone IS NULL AND run_at IS NOT NULL)),
      CONSTRAINT automations_next_run_shape CHECK ((status = 'active') = (next_run_at IS NOT NULL)),
      CONSTRAINT automations_pause_reason_shape CHECK (pause_reason IS NULL OR status = 'paused'),
      CONSTRAINT automations_periodic_never_completes CHECK (type = 'once' OR status <> 'completed'))`);
    await q.query(`CREATE INDEX automations_owner_page_idx ON automations (owner_id, created_at, id)`);
    await q.query(`CREATE INDEX automations_account_idx ON automations (account_id)`);
    // What is due: timers miss nothing the sweep does not find through this.
    await q.query(`CREATE INDEX automations_due_idx ON automations (next_run_at) WHERE status = 'active'`);
    await q.query(`CREATE INDEX automations_target_session_idx ON automations (target_session_id) WHERE target_session_id IS NOT NULL`);

    await q.query(`CREATE TABLE automation_invocations (
      id uuid PRIMARY KEY,
      automation_id uuid NOT NULL REFERENCES automations(id) ON DELETE CASCADE,
      owner_id uuid NOT NULL,
      source varchar(10) NOT NULL CHECK (source IN ('automation', 'manual')),
      scheduled_at timestamptz,
      status varchar(10) NOT NULL CHECK (status IN ('queued', 'completed', 'failed', 'skipped')),
      skip_reason varchar(32),
      reason varchar(40) NOT NULL,
      error jsonb,
      session_id uuid,
      input_id uuid,
      -- the automation as it was when this scheduled time fired (source.automation)
      automation_snapshot jsonb,
      fired_at timestamptz,
      created_at timestamptz NOT NULL,
      CONSTRAINT automation_invocations_source_shape CHECK ((source = 'automation') = (scheduled_at IS NOT NULL)),
      CONSTRAINT automation_invocations_skip_shape CHECK ((status = 'skipped') = (skip_reason IS NOT NULL)),
      CONSTRAINT automation_invocations_error_shape CHECK ((status = 'failed') = (error IS NOT NULL)),
      -- each scheduled time is recorded once, whatever the number of workers and restarts (manual runs have no time)
      CONSTRAINT automation_invocations_once_per_time UNIQUE (automation_id, scheduled_at))`);
    await q.query(`CREATE INDEX automation_invocations_page_idx ON automation_invocations (automation_id, created_at, id)`);
    // The previous invocation's session (overlap) and the invocations that fed a session.
    await q.query(`CREATE INDEX automation_invocations_session_idx ON automation_invocations (session_id) WHERE session_id IS NOT NULL`);
    await q.query(`CREATE INDEX automation_invocations_previous_idx ON automation_invocations (automation_id, created_at DESC, id DESC) WHERE input_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE automation_invocations`);
    await q.query(`DROP TABLE automations`);
  }
}
