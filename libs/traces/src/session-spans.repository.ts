import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { StoredSpan } from './otlp-json.js';
import type { SpanRowOfPage, TracedTurn } from './trace-page.js';

/** Retention deletes at most this many spans a statement (a short lock, a bounded WAL burst). */
export const SPAN_DELETE_BATCH = 1000;

interface TurnRow {
  id: string;
  trace_id: string;
  created_at: Date;
}

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
 * span store (SpanStoreWriter) in batches, read per trace by the traces route, deleted by age.
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
    const rows = spans.map((span) => ({ session_id: span.sessionId, trace_id: span.traceId, span_id: span.spanId, span: span.span, resource: span.resource, scope: span.scope, start_at: span.startAt.toISOString() }));
    await this.dataSource.query(
      prepared(`INSERT INTO session_spans (session_id, trace_id, span_id, span, resource, scope, start_at)
       SELECT r.session_id, r.trace_id, r.span_id, r.span, r.resource, r.scope, r.start_at
       FROM jsonb_to_recordset($1::jsonb) AS r(session_id uuid, trace_id varchar, span_id varchar, span jsonb, resource jsonb, scope jsonb, start_at timestamptz)
       ON CONFLICT DO NOTHING`),
      [JSON.stringify(rows)],
    );
  }

  /**
   * One page of the session's turns that have a trace with stored spans, in turn order (`seq`),
   * `after` a turn of the session (else 400 `invalid_cursor`). The session's own turns only: a
   * fork's inherited turns ran in its ancestor, whose traces they are.
   *
   * Reads `turns` (the engine's table) because its `trace_id` column is this feature's (migration
   * Traces1767300000000), and paging over "turns with spans" is one indexed statement here, never a
   * walk over turns that have none.
   */
  async tracedTurns(sessionId: string, page: PageQuery): Promise<Page<TracedTurn>> {
    let anchorSeq: number | null = null;
    if (page.after !== undefined) {
      const [anchor] = isUuid(page.after) ? ((await this.dataSource.query(prepared(`SELECT seq FROM turns WHERE id = $1 AND session_id = $2`), [page.after, sessionId])) as { seq: number }[]) : [];
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a turn of this session');
      anchorSeq = anchor.seq;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const from = anchorSeq === null ? '' : `AND t.seq ${page.order === 'desc' ? '<' : '>'} $3`;
    const rows = (await this.dataSource.query(
      prepared(`SELECT t.id, t.trace_id, t.created_at FROM turns t
       WHERE t.session_id = $1 AND t.trace_id IS NOT NULL ${from}
         AND EXISTS (SELECT 1 FROM session_spans s WHERE s.session_id = $1 AND s.trace_id = t.trace_id)
       ORDER BY t.seq ${direction} LIMIT $2`),
      anchorSeq === null ? [sessionId, page.limit + 1] : [sessionId, page.limit + 1, anchorSeq],
    )) as TurnRow[];
    return toPage(
      rows.map((row) => ({ id: row.id, traceId: row.trace_id, createdAt: row.created_at })),
      page.limit,
    );
  }

  /**
   * The stored spans of the traces, the `ord`-th trace's (from 0) before the next one's, each in
   * start order. Read up to `boundBytes`: a span is returned only while the spans before it (in
   * that order) hold fewer bytes, so a page never holds more in memory than one response and one
   * span. `total` is how many spans the trace has, read or not. The same trace twice (two turns
   * of one client trace) is returned twice, once per position.
   */
  async spansOfTraces(sessionId: string, traceIds: readonly string[], boundBytes: number): Promise<SpanRowOfPage[]> {
    if (traceIds.length === 0) return [];
    const rows = (await this.dataSource.query(
      prepared(`SELECT x.ord, x.span, x.resource, x.scope, x.bytes, x.total FROM (
         SELECT o.ord, s.span, s.resource, s.scope, s.start_at, s.span_id, octet_length(s.span::text) AS bytes,
           count(*) OVER (PARTITION BY o.ord) AS total,
           sum(octet_length(s.span::text)) OVER (ORDER BY o.ord, s.start_at, s.span_id ROWS UNBOUNDED PRECEDING) AS running
         FROM unnest($2::varchar[]) WITH ORDINALITY AS o(trace_id, ord)
         JOIN session_spans s ON s.session_id = $1 AND s.trace_id = o.trace_id
       ) x
       WHERE x.running - x.bytes < $3
       ORDER BY x.ord, x.start_at, x.span_id`),
      [sessionId, traceIds, boundBytes],
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
