import type { EntityManager } from 'typeorm';
import { isUuid, type Page, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';

/** A turn with the trace it belongs to (`turns.trace_id`), its position and the inputs it consumed. */
export interface TracedTurnRow {
  id: string;
  traceId: string;
  createdAt: Date;
  /** The turn's `seq`: the anchor of the next chunk (no cursor read per chunk). */
  seq: number;
  /** The inputs its runs consumed (runs.input_ids, in run order), at most MAX_TRACED_TURN_INPUTS: their `accept_input` spans are in its entry. */
  inputIds: string[];
}

/** A turn's entry names at most this many of its inputs (a claimed batch, a yield's steers, runs after runs). */
export const MAX_TRACED_TURN_INPUTS = 100;

/**
 * A turn settled this long before the spans' retention age may still have spans: they are stored
 * after the work they time (a webhook's retries, hours later), and retention deletes by the age of
 * a span's row, not of its turn.
 */
export const TRACED_TURN_RETENTION_MARGIN_S = 24 * 3600;

/** A chunk of the traces route's scan: after the turn at `afterSeq` (null: from the start), in `order`. */
export interface TracedTurnsQuery {
  afterSeq: number | null;
  /** The page's `after` cursor, given to its first chunk only (its seq is read once; later chunks pass `afterSeq`). */
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
  /** TRACE_RETENTION_S: turns settled longer ago than this (and the margin) have no spans left and are not read. */
  retentionS: number;
}

/**
 * The `seq` of the turn an `after` cursor names (a turn of the session, else 400 `invalid_cursor`;
 * not even a UUID: no statement). Read once per page: the chunks of a scan pass the seq on.
 */
async function tracedTurnAnchor(manager: EntityManager, sessionId: string, after: string): Promise<number> {
  const [anchor] = isUuid(after) ? ((await manager.query(prepared(`SELECT seq FROM turns WHERE id = $1 AND session_id = $2`), [after, sessionId])) as { seq: number }[]) : [];
  if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a turn of this session');
  return Number(anchor.seq);
}

/**
 * A chunk of the session's turns that carry a trace id and may still have spans (unsettled, or
 * settled within TRACE_RETENTION_S and a margin), in `seq` order: what the traces route pages over.
 * The partial index turns (session_id, seq) WHERE trace_id IS NOT NULL holds only traced turns, so
 * untraced ones are never walked. The session's own turns only: a fork's inherited turns ran in
 * its ancestor, whose traces they are. Whether a turn's trace has stored spans is libs/traces' to
 * say (the protocol's use case asks it): the engine never reads the span store, nor the span store
 * the turns. Each turn's inputs come from its runs (the (turn_id, seq) key), bounded.
 */
export async function tracedTurnsPage(manager: EntityManager, sessionId: string, query: TracedTurnsQuery): Promise<Page<TracedTurnRow>> {
  const desc = query.order === 'desc';
  const afterSeq = query.afterSeq ?? (query.after === undefined ? null : await tracedTurnAnchor(manager, sessionId, query.after));
  const from = afterSeq === null ? '' : `AND t.seq ${desc ? '<' : '>'} $5`;
  const parameters: unknown[] = [sessionId, query.limit + 1, query.retentionS + TRACED_TURN_RETENTION_MARGIN_S, MAX_TRACED_TURN_INPUTS];
  if (afterSeq !== null) parameters.push(afterSeq);
  const rows = (await manager.query(
    prepared(`SELECT t.id, t.trace_id, t.created_at, t.seq,
         ARRAY(SELECT i.id FROM runs r CROSS JOIN LATERAL unnest(r.input_ids) AS i(id) WHERE r.turn_id = t.id ORDER BY r.seq LIMIT $4) AS input_ids
       FROM turns t
       WHERE t.session_id = $1 AND t.trace_id IS NOT NULL ${from}
         AND (t.completed_at IS NULL OR t.completed_at >= now() - make_interval(secs => $3::double precision))
       ORDER BY t.seq ${desc ? 'DESC' : 'ASC'} LIMIT $2`),
    parameters,
  )) as { id: string; trace_id: string; created_at: Date; seq: number | string; input_ids: string[] }[];
  return toPage(
    rows.map((row) => ({ id: row.id, traceId: row.trace_id, createdAt: row.created_at, seq: Number(row.seq), inputIds: row.input_ids })),
    query.limit,
  );
}
