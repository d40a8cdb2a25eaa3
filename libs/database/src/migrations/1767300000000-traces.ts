import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Traces (OpenTelemetry): the trace a turn belongs to, the trace context a webhook delivery carries
 * to its receiver, and the spans kept per session for `GET /sessions/{id}/traces` (read with no
 * collector). Everything is written only while tracing is on: off, the columns stay NULL and the
 * span table empty.
 *
 * The nullable columns have no default: catalogue-only changes, no table rewrite. `session_spans`
 * has no foreign keys: spans arrive in batches after the fact (a span store write must never wait
 * on a session's row lock), and rows are removed by age (TRACE_RETENTION_S) in small batches.
 */
export class Traces1767300000000 implements MigrationInterface {
  name = 'Traces1767300000000';

  async up(q: QueryRunner): Promise<void> {
    // 32 lowercase hex: the W3C trace id of the input that started the turn.
    await q.query(`ALTER TABLE turns ADD COLUMN trace_id varchar(32) CONSTRAINT turns_trace_id_hex CHECK (trace_id ~ '^[0-9a-f]{32}$')`);
    // The traces route pages a session's traced turns in seq order: only they are in this index, so
    // a session's untraced turns (tracing off) are never walked. Empty while tracing is off, and the
    // insert of an untraced turn does not touch it.
    await q.query(`CREATE INDEX turns_traced_idx ON turns (session_id, seq) WHERE trace_id IS NOT NULL`);
    // {traceparent, tracestate?}: the context of the work that caused the event (its attempts are child spans).
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN trace jsonb`);
    await q.query(`CREATE TABLE session_spans (
      session_id uuid NOT NULL,
      trace_id varchar(32) NOT NULL,
      span_id varchar(16) NOT NULL,
      -- the span's yuxi.turn_id (the worker's spans, a turn's webhook deliveries); NULL for the api's
      -- request and accept_input spans and an automation's fire, made before a turn exists
      turn_id uuid,
      -- the parent span (hex); NULL for a root: a turn's entry takes the parents of its inputs'
      -- accept_input spans (the request that sent the input, the automation's fire)
      parent_span_id varchar(16),
      -- an accept_input span's yuxi.input_id: a turn's entry takes the acceptances of its inputs
      input_id uuid,
      -- the OTLP JSON span (ids hex, times as unix nanoseconds strings), as the OTLP/HTTP JSON encoding writes it
      span jsonb NOT NULL,
      -- the OTLP JSON resource of the process that made it (service.name, its role)
      resource jsonb NOT NULL,
      -- the instrumentation scope {name, version}
      scope jsonb NOT NULL,
      start_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (session_id, trace_id, span_id)
    )`);
    // The traces route reads a turn's entry from index ranges: (session, trace, the turn) for its
    // own spans, (session, trace, NULL, one of its inputs) for its inputs' acceptances, and the
    // primary key for their parents. Never every span of a trace, nor every span of no turn, per
    // turn: turns sharing a client's trace would each read all of them (quadratic in its turns).
    await q.query(`CREATE INDEX session_spans_turn_idx ON session_spans (session_id, trace_id, turn_id, input_id)`);
    // Retention deletes by age, oldest first, a batch at a time.
    await q.query(`CREATE INDEX session_spans_created_idx ON session_spans (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE session_spans`);
    await q.query(`ALTER TABLE webhook_deliveries DROP COLUMN trace`);
    await q.query(`DROP INDEX turns_traced_idx`);
    await q.query(`ALTER TABLE turns DROP COLUMN trace_id`);
  }
}
