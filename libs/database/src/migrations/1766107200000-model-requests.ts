import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The exact model requests (MODEL_REQUEST_AUDIT=on): one row per model-call step, its
 * primary key the step's id, written by the worker in the transaction that commits the step. The
 * run, session and order are the step's, copied so a run's requests are one index range
 * (`(run_id, seq)`, also the cursor's order) without touching run_steps. `request` is `json`, not
 * `jsonb`: the text is kept as serialised (the order of its keys included), never queried into,
 * and stored without a conversion. Rows go with their step, run and session. Nothing is written while the setting is off: an empty table costs nothing.
 */
export class ModelRequests1766107200000 implements MigrationInterface {
  name = 'ModelRequests1766107200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE model_requests (
        step_id uuid PRIMARY KEY REFERENCES run_steps (id) ON DELETE CASCADE,
        run_id uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq integer NOT NULL CHECK (seq > 0),
        model varchar(200) NOT NULL,
        request json NOT NULL,
        created_at timestamptz NOT NULL,
        UNIQUE (run_id, seq)
      )`);
    // The session's FK is checked on every write and cascades on delete: indexed for the latter.
    await q.query(`CREATE INDEX model_requests_session_idx ON model_requests (session_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE model_requests`);
  }
}
