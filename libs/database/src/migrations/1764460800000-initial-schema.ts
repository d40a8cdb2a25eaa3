import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The baseline schema. Invariants live in constraints, not in code paths:
 * one idempotency receipt per (owner, scope, key), one active turn per session,
 * per-session monotonic input and item sequences.
 */
export class InitialSchema1764460800000 implements MigrationInterface {
  name = 'InitialSchema1764460800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        name text NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        user_id uuid NOT NULL REFERENCES users(id),
        name text NOT NULL,
        prefix varchar(12) NOT NULL,
        secret_hash char(64) NOT NULL UNIQUE,
        scopes text[] NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await q.query(`CREATE INDEX api_keys_prefix_idx ON api_keys (prefix)`);
    await q.query(`
      CREATE TABLE agents (
        id varchar(64) PRIMARY KEY,
        owner_id uuid REFERENCES users(id),
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        instructions text NOT NULL DEFAULT '',
        model varchar(200),
        tool_approval_mode varchar(32) NOT NULL DEFAULT 'ask'
          CHECK (tool_approval_mode IN ('ask', 'always_trust')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      INSERT INTO agents (id, name, description, instructions)
      VALUES ('default-chatbot', 'Default Chatbot', 'A general-purpose assistant available on every install.',
              'You are a helpful assistant.')`);
    await q.query(`
      CREATE TABLE sessions (
        id uuid PRIMARY KEY,
        owner_id uuid NOT NULL REFERENCES users(id),
        agent_id varchar(64) NOT NULL REFERENCES agents(id),
        model varchar(200) NOT NULL,
        tool_approval_mode varchar(32) NOT NULL,
        instructions text NOT NULL,
        title text NOT NULL,
        project_id varchar(128),
        is_pinned boolean NOT NULL DEFAULT false,
        archived boolean NOT NULL DEFAULT false,
        unread boolean NOT NULL DEFAULT false,
        queue_paused boolean NOT NULL DEFAULT false,
        input_seq bigint NOT NULL DEFAULT 0,
        item_seq bigint NOT NULL DEFAULT 0,
        turn_seq integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        last_active_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX sessions_owner_page_idx ON sessions (owner_id, created_at, id)`);
    await q.query(`
      CREATE TABLE inputs (
        id uuid PRIMARY KEY,
        session_id uuid NOT NULL REFERENCES sessions(id),
        received_seq bigint NOT NULL,
        mode varchar(16) NOT NULL CHECK (mode IN ('follow_up', 'steer')),
        status varchar(16) NOT NULL CHECK (status IN ('pending', 'consumed', 'cancelled')),
        messages jsonb NOT NULL,
        attachment_file_ids jsonb NOT NULL DEFAULT '[]',
        config jsonb NOT NULL,
        turn_id uuid,
        run_id uuid,
        received_at timestamptz NOT NULL,
        consumed_at timestamptz,
        cancelled_at timestamptz,
        UNIQUE (session_id, received_seq)
      )`);
    await q.query(`CREATE INDEX inputs_pending_idx ON inputs (session_id, received_seq) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX inputs_pending_age_idx ON inputs (received_at) WHERE status = 'pending'`);
    await q.query(`
      CREATE TABLE idempotency_receipts (
        id uuid PRIMARY KEY,
        owner_id uuid NOT NULL REFERENCES users(id),
        scope varchar(80) NOT NULL,
        idempotency_key varchar(128) NOT NULL,
        request_hash char(64) NOT NULL,
        session_id uuid,
        input_id uuid,
        receipt jsonb,
        response_status integer,
        response_body text,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        UNIQUE (owner_id, scope, idempotency_key)
      )`);
    await q.query(`CREATE INDEX idempotency_receipts_session_idx ON idempotency_receipts (session_id, idempotency_key)`);
    await q.query(`CREATE INDEX idempotency_receipts_expiry_idx ON idempotency_receipts (expires_at)`);
    await q.query(`
      CREATE TABLE turns (
        id uuid PRIMARY KEY,
        session_id uuid NOT NULL REFERENCES sessions(id),
        seq integer NOT NULL,
        status varchar(24) NOT NULL
          CHECK (status IN ('queued', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled')),
        agent_id varchar(64) NOT NULL,
        model varchar(200) NOT NULL,
        current_run_id uuid,
        result_run_id uuid,
        waitpoint jsonb,
        cancellation_pending boolean NOT NULL DEFAULT false,
        error jsonb,
        usage jsonb,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz,
        UNIQUE (session_id, seq)
      )`);
    await q.query(`
      CREATE UNIQUE INDEX turns_one_active_per_session ON turns (session_id)
      WHERE status IN ('queued', 'in_progress', 'requires_action')`);
    await q.query(`
      CREATE TABLE runs (
        id uuid PRIMARY KEY,
        turn_id uuid NOT NULL REFERENCES turns(id),
        session_id uuid NOT NULL REFERENCES sessions(id),
        seq integer NOT NULL,
        status varchar(24) NOT NULL
          CHECK (status IN ('queued', 'in_progress', 'completed', 'failed', 'cancelled', 'yielded', 'interrupted')),
        input_ids uuid[] NOT NULL,
        model varchar(200) NOT NULL,
        config jsonb NOT NULL,
        resume_from_run_id uuid,
        lease_owner varchar(200),
        lease_expires_at timestamptz,
        created_at timestamptz NOT NULL,
        started_at timestamptz,
        completed_at timestamptz,
        error jsonb,
        usage jsonb,
        UNIQUE (turn_id, seq)
      )`);
    await q.query(`CREATE INDEX runs_lease_idx ON runs (lease_expires_at) WHERE status = 'in_progress'`);
    await q.query(`
      CREATE TABLE items (
        id uuid PRIMARY KEY,
        session_id uuid NOT NULL REFERENCES sessions(id),
        turn_id uuid NOT NULL REFERENCES turns(id),
        run_id uuid REFERENCES runs(id),
        input_id uuid,
        seq bigint NOT NULL,
        type varchar(32) NOT NULL,
        role varchar(16),
        status varchar(16) NOT NULL CHECK (status IN ('in_progress', 'completed', 'incomplete')),
        content jsonb NOT NULL,
        phase varchar(16),
        created_at timestamptz NOT NULL,
        UNIQUE (session_id, seq)
      )`);
    await q.query(`CREATE INDEX items_turn_idx ON items (turn_id, seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['items', 'runs', 'turns', 'idempotency_receipts', 'inputs', 'sessions', 'agents', 'api_keys', 'users']) {
      await q.query(`DROP TABLE IF EXISTS ${table}`);
    }
  }
}
