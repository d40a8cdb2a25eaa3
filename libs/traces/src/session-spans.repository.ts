import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { prepared } from '#libs/database';
import type { StoredSpan } from './otlp-json.js';
import type { SpanRowOfPage, TracedTurn } from './trace-page.js';

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
    const rows = spans.map((span) => ({ session_id: span.sessionId, trace_id: span.traceId, span_id: span.spanId, turn_id: span.turnId, span: span.span, resource: span.resource, scope: span.scope, start_at: span.startAt.toISOString() }));
    await this.dataSource.query(
      prepared(`INSERT INTO session_spans (session_id, trace_id, span_id, turn_id, span, resource, scope, start_at)
       SELECT r.session_id, r.trace_id, r.span_id, r.turn_id, r.span, r.resource, r.scope, r.start_at
       FROM jsonb_to_recordset($1::jsonb) AS r(session_id uuid, trace_id varchar, span_id varchar, turn_id uuid, span jsonb, resource jsonb, scope jsonb, start_at timestamptz)
       ON CONFLICT DO NOTHING`),
      [JSON.stringify(rows)],
    );
  }

  /**
   * Which of the turns have an entry: a stored span of the turn's trace that is the turn's or no
   * turn's (the api's request and `accept_input`). Their positions in `turns`, one statement; each
   * EXISTS is one probe of the (session, trace, turn) index.
   */
  async withSpans(sessionId: string, turns: readonly TracedTurn[]): Promise<Set<number>> {
    if (turns.length === 0) return new Set();
    const rows = (await this.dataSource.query(
      prepared(`SELECT o.ord FROM unnest($2::uuid[], $3::varchar[]) WITH ORDINALITY AS o(turn_id, trace_id, ord)
       WHERE EXISTS (SELECT 1 FROM session_spans s WHERE s.session_id = $1 AND s.trace_id = o.trace_id AND s.turn_id = o.turn_id)
          OR EXISTS (SELECT 1 FROM session_spans s WHERE s.session_id = $1 AND s.trace_id = o.trace_id AND s.turn_id IS NULL)`),
      [sessionId, turns.map((turn) => turn.id), turns.map((turn) => turn.traceId)],
    )) as { ord: string | number }[];
    return new Set(rows.map((row) => Number(row.ord) - 1));
  }

  /**
   * The stored spans of the turns' entries, the `ord`-th turn's (from 0) before the next one's,
   * each in start order. A turn's entry is the spans of its trace that are its own (`turn_id`) or
   * no turn's (NULL: the api's request and `accept_input` spans): two index ranges, so turns that
   * share a trace read only their own spans, never the whole trace each. Read up to `boundBytes`:
   * a span is returned only while the spans before it (in that order) hold fewer bytes, so a page
   * never holds more in memory than one response and one span. `total` is how many spans the
   * entry has, read or not.
   */
  async spansOfTurns(sessionId: string, turns: readonly TracedTurn[], boundBytes: number): Promise<SpanRowOfPage[]> {
    if (turns.length === 0) return [];
    const rows = (await this.dataSource.query(
      prepared(`SELECT x.ord, x.span, x.resource, x.scope, x.bytes, x.total FROM (
         SELECT o.ord, s.span, s.resource, s.scope, s.start_at, s.span_id, s.bytes,
           count(*) OVER (PARTITION BY o.ord) AS total,
           sum(s.bytes) OVER (ORDER BY o.ord, s.start_at, s.span_id ROWS UNBOUNDED PRECEDING) AS running
         FROM unnest($2::uuid[], $3::varchar[]) WITH ORDINALITY AS o(turn_id, trace_id, ord)
         CROSS JOIN LATERAL (
           SELECT t.span, t.resource, t.scope, t.start_at, t.span_id, octet_length(t.span::text) AS bytes FROM session_spans t
           WHERE t.session_id = $1 AND t.trace_id = o.trace_id AND t.turn_id = o.turn_id
           UNION ALL
           SELECT n.span, n.resource, n.scope, n.start_at, n.span_id, octet_length(n.span::text) FROM session_spans n
           WHERE n.session_id = $1 AND n.trace_id = o.trace_id AND n.turn_id IS NULL
         ) s
       ) x
       WHERE x.running - x.bytes < $4
       ORDER BY x.ord, x.start_at, x.span_id`),
      [sessionId, turns.map((turn) => turn.id), turns.map((turn) => turn.traceId), boundBytes],
    )) as SpanRow[];
    return rows.map((row) => ({ ord: Number(row.ord) - 1, span: row.span, resource: row.resource, scope: row.scope, bytes: Number(row.bytes), total: Number(row.total) }));
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
