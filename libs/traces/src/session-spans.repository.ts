import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { deleteRowsBatch, prepared, type RowStorage } from '#libs/database';
import type { StoredSpan } from './otlp-json.js';
import type { SpanRowOfPage, TracedTurn } from './trace-page.js';

/**
 * The session, then the turns as parallel arrays (their ids, trace ids and inputs): each turn's
 * inputs as one Postgres array literal (`{uuid,…}`; the engine's UUIDs), since arrays of arrays of
 * different lengths do not bind.
 */
function turnParameters(sessionId: string, turns: readonly TracedTurn[]): unknown[] {
  return [sessionId, turns.map((turn) => turn.id), turns.map((turn) => turn.traceId), turns.map((turn) => `{${turn.inputIds.join(',')}}`)];
}

/** Retention deletes at most this many spans a statement (a short lock, a bounded WAL burst). */
export const SPAN_DELETE_BATCH = 1000;

interface SpanRow {
  ord: string | number;
  span: SpanRowOfPage['span'];
  resource: SpanRowOfPage['resource'];
  scope: SpanRowOfPage['scope'];
  bytes: string | number;
  total: string | number;
}

/**
 * `session_spans`: the spans of sessions, one row a span in its OTLP JSON encoding, written by the
 * span store (SpanStoreWriter) in batches, read per turn by the traces route (the turns themselves
 * come from the engine, through the protocol's use case), deleted by age.
 * Raw SQL: every statement is one round trip whatever the batch.
 */
@Injectable()
export class SessionSpansRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * One exported batch in one statement. A span already stored (the same ids: a batch retried) is
   * left as it is. The rows travel as one jsonb array, so the statement's text does not grow with
   * the batch (one prepared statement for every size).
   */
  async insert(spans: readonly StoredSpan[]): Promise<void> {
    if (spans.length === 0) return;
    const rows = spans.map((span) => ({
      session_id: span.sessionId,
      trace_id: span.traceId,
      span_id: span.spanId,
      turn_id: span.turnId,
      parent_span_id: span.parentSpanId,
      input_id: span.inputId,
      span: span.span,
      resource: span.resource,
      scope: span.scope,
      start_at: span.startAt.toISOString(),
    }));
    // The session check below leaves a race open: a purge committing the sessions row's delete while
    // this statement runs (its snapshot still sees the row) leaves these spans orphans, which
    // TRACE_RETENTION_S removes and the invariant session_rows_belong_to_sessions would report.
    // Closing it takes FOR KEY SHARE on each sessions row (what a foreign key costs): a tuple lock
    // written per batch and session, a multixact beside the turn path's own updates of the row, and
    // a span write that may wait, which this table was built never to do. The window is one
    // statement, after a session's purge grace (7 days by default), so it stays open.
    await this.dataSource.query(
      prepared(`INSERT INTO session_spans (session_id, trace_id, span_id, turn_id, parent_span_id, input_id, span, resource, scope, start_at)
       SELECT r.session_id, r.trace_id, r.span_id, r.turn_id, r.parent_span_id, r.input_id, r.span, r.resource, r.scope, r.start_at
       FROM jsonb_to_recordset($1::jsonb) AS r(session_id uuid, trace_id varchar, span_id varchar, turn_id uuid, parent_span_id varchar, input_id uuid, span jsonb, resource jsonb, scope jsonb, start_at timestamptz)
       -- A span exported after its session was purged (a late batch) names no session any more: dropped.
       WHERE EXISTS (SELECT 1 FROM sessions s WHERE s.id = r.session_id)
       ON CONFLICT DO NOTHING`),
      [JSON.stringify(rows)],
    );
  }

  /**
   * Which of the turns have an entry: a stored span of the turn's trace that is the turn's, or the
   * `accept_input` span of one of its inputs. Their positions in `turns`, one statement; each EXISTS
   * is one probe of the (session, trace, turn, input) index.
   */
  async withSpans(sessionId: string, turns: readonly TracedTurn[]): Promise<Set<number>> {
    if (turns.length === 0) return new Set();
    const rows = (await this.dataSource.query(
      prepared(`SELECT o.ord FROM unnest($2::uuid[], $3::varchar[], $4::text[]) WITH ORDINALITY AS o(turn_id, trace_id, inputs, ord)
       WHERE EXISTS (SELECT 1 FROM session_spans s WHERE s.session_id = $1 AND s.trace_id = o.trace_id AND s.turn_id = o.turn_id)
          OR EXISTS (SELECT 1 FROM session_spans s WHERE s.session_id = $1 AND s.trace_id = o.trace_id AND s.turn_id IS NULL AND s.input_id = ANY (o.inputs::uuid[]))`),
      turnParameters(sessionId, turns),
    )) as { ord: string | number }[];
    return new Set(rows.map((row) => Number(row.ord) - 1));
  }

  /**
   * The stored spans of the turns' entries, the `ord`-th turn's (from 0) before the next one's,
   * each in start order. A turn's entry is the spans of its trace that are its own (`turn_id`: the
   * worker's, its webhook deliveries), the `accept_input` spans of its inputs (`input_id`) and their
   * parents (the request that sent the input, an automation's fire): index ranges and primary key
   * probes, so turns that share a trace read only their own spans, never the whole trace, nor all
   * its spans of no turn, each (a client reusing one traceparent for every message). Read up to
   * `boundBytes`: a span is returned only while the spans before it (in that order) hold fewer
   * bytes, so a page never holds more in memory than one response and one span. `total` is how many
   * spans the entry has, read or not.
   */
  async spansOfTurns(sessionId: string, turns: readonly TracedTurn[], boundBytes: number): Promise<SpanRowOfPage[]> {
    if (turns.length === 0) return [];
    const rows = (await this.dataSource.query(
      prepared(`WITH o AS (
         SELECT o.turn_id, o.trace_id, o.inputs, o.ord FROM unnest($2::uuid[], $3::varchar[], $4::text[]) WITH ORDINALITY AS o(turn_id, trace_id, inputs, ord)
       ), accepted AS (
         SELECT o.ord, a.trace_id, a.span_id, a.parent_span_id, a.span, a.resource, a.scope, a.start_at FROM o
         JOIN session_spans a ON a.session_id = $1 AND a.trace_id = o.trace_id AND a.turn_id IS NULL AND a.input_id = ANY (o.inputs::uuid[])
       ), inputs AS (
         -- an input's acceptance and its parent, once per turn (two inputs of one request share it)
         SELECT DISTINCT ON (n.ord, n.span_id) n.ord, n.span, n.resource, n.scope, n.start_at, n.span_id FROM (
           SELECT a.ord, a.span, a.resource, a.scope, a.start_at, a.span_id FROM accepted a
           UNION ALL
           SELECT a.ord, p.span, p.resource, p.scope, p.start_at, p.span_id FROM accepted a
           JOIN session_spans p ON p.session_id = $1 AND p.trace_id = a.trace_id AND p.span_id = a.parent_span_id AND p.turn_id IS NULL
         ) n ORDER BY n.ord, n.span_id
       ), entry AS (
         SELECT o.ord, t.span, t.resource, t.scope, t.start_at, t.span_id FROM o
         JOIN session_spans t ON t.session_id = $1 AND t.trace_id = o.trace_id AND t.turn_id = o.turn_id
         UNION ALL
         SELECT i.ord, i.span, i.resource, i.scope, i.start_at, i.span_id FROM inputs i
       )
       SELECT x.ord, x.span, x.resource, x.scope, x.bytes, x.total FROM (
         SELECT e.ord, e.span, e.resource, e.scope, e.start_at, e.span_id, octet_length(e.span::text) AS bytes,
           count(*) OVER (PARTITION BY e.ord) AS total,
           sum(octet_length(e.span::text)) OVER (ORDER BY e.ord, e.start_at, e.span_id ROWS UNBOUNDED PRECEDING) AS running
         FROM entry e
       ) x
       WHERE x.running - x.bytes < $5
       ORDER BY x.ord, x.start_at, x.span_id`),
      [...turnParameters(sessionId, turns), boundBytes],
    )) as SpanRow[];
    return rows.map((row) => ({ ord: Number(row.ord) - 1, span: row.span, resource: row.resource, scope: row.scope, bytes: Number(row.bytes), total: Number(row.total) }));
  }

  /** The purge of deleted sessions: up to `limit` of their spans (the primary key's prefix), whatever their age. */
  purgeSessions(sessionIds: string[], limit: number): Promise<RowStorage> {
    return deleteRowsBatch(this.dataSource, 'session_spans', 't.session_id = ANY($1::uuid[])', [sessionIds], limit);
  }

  /**
   * Deletes up to `limit` spans stored more than `olderThanSeconds` ago, oldest first (the
   * `created_at` index); returns how many. Retention calls it in a loop of a few batches.
   */
  async deleteOlderThan(olderThanSeconds: number, limit = SPAN_DELETE_BATCH): Promise<number> {
    const [, deleted] = (await this.dataSource.query(
      prepared(`DELETE FROM session_spans WHERE ctid IN (
         SELECT ctid FROM session_spans WHERE created_at < now() - make_interval(secs => $1::double precision)
         ORDER BY created_at LIMIT $2)`),
      [olderThanSeconds, limit],
    )) as [unknown, number];
    return deleted;
  }
}
