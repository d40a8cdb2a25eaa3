import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The durable core: runs carry a fencing epoch (per session, growing with every lease), every
 * durable event is an outbox row in the transaction of the facts it announces, and each completed
 * model call (later tool call, waitpoint) is a committed step a takeover does not repeat.
 */
export class DurableCore1764892800000 implements MigrationInterface {
  name = 'DurableCore1764892800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE runs ADD COLUMN epoch bigint NOT NULL DEFAULT 0`);
    // What the run has shown so far ({item_id, output_index, text}), saved by each heartbeat: with
    // the deltas in the stream, what a takeover keeps of a run whose worker died.
    await q.query(`ALTER TABLE runs ADD COLUMN checkpoint jsonb`);
    await q.query(`CREATE INDEX runs_session_epoch_idx ON runs (session_id, epoch)`);
    // Runs waiting for a worker to take them over (after a crash or a graceful release).
    await q.query(`CREATE INDEX runs_unleased_idx ON runs (session_id) WHERE status = 'in_progress' AND lease_owner IS NULL`);
    // The outbox is insert-only: whether a row reached Redis is the stream's own sequence number
    // (`yuxi:event-seq:{session}`), and the relay re-checks recent rows against it, so publishing
    // costs no second write per event. created_at is the insert's own clock (not the transaction
    // start), so a relay window never misses a row of a transaction that began long ago.
    await q.query(`
      CREATE TABLE session_events (
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq bigint NOT NULL CHECK (seq > 0),
        event_id varchar(40) NOT NULL,
        type varchar(96) NOT NULL,
        epoch bigint,
        nudge boolean NOT NULL DEFAULT false,
        payload text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (session_id, seq)
      )`);
    await q.query(`CREATE INDEX session_events_created_idx ON session_events (created_at)`);
    // How far the relay has confirmed every row reached the stream; one row, advanced by one relay at a time.
    await q.query(`CREATE TABLE outbox_relay_state (id smallint PRIMARY KEY CHECK (id = 1), relayed_until timestamptz NOT NULL)`);
    await q.query(`INSERT INTO outbox_relay_state (id, relayed_until) VALUES (1, now())`);
    await q.query(`
      CREATE TABLE run_steps (
        id uuid PRIMARY KEY,
        run_id uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        turn_id uuid NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
        session_id uuid NOT NULL,
        seq integer NOT NULL CHECK (seq > 0),
        kind varchar(24) NOT NULL CHECK (kind IN ('model_call', 'tool_call', 'waitpoint')),
        status varchar(16) NOT NULL CHECK (status IN ('completed', 'failed')),
        input jsonb NOT NULL DEFAULT '{}',
        output jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL,
        UNIQUE (turn_id, seq)
      )`);
    await q.query(`CREATE INDEX run_steps_run_idx ON run_steps (run_id, seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE run_steps`);
    await q.query(`DROP TABLE outbox_relay_state`);
    await q.query(`DROP TABLE session_events`);
    await q.query(`DROP INDEX runs_unleased_idx`);
    await q.query(`DROP INDEX runs_session_epoch_idx`);
    await q.query(`ALTER TABLE runs DROP COLUMN checkpoint`);
    await q.query(`ALTER TABLE runs DROP COLUMN epoch`);
  }
}
