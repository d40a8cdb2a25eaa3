import type { EntityManager } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';

/** A turn with the trace it belongs to (`turns.trace_id`). */
export interface TracedTurnRow {
  id: string;
  traceId: string;
  createdAt: Date;
}

/**
 * A page of the session's turns that carry a trace id (`after` a turn of the session, else 400
 * `invalid_cursor`), in `seq` order (the (session_id, seq) key): what the traces route pages over.
 * The session's own turns only: a fork's inherited turns ran in its ancestor, whose traces they
 * are. Whether a turn's trace has stored spans is libs/traces' to say (the protocol's use case asks
 * it): the engine never reads the span store, nor the span store the turns.
 */
export async function tracedTurnsPage(manager: EntityManager, sessionId: string, page: PageQuery): Promise<Page<TracedTurnRow>> {
  let anchorSeq: number | null = null;
  if (page.after !== undefined) {
    const [anchor] = isUuid(page.after) ? ((await manager.query(prepared(`SELECT seq FROM turns WHERE id = $1 AND session_id = $2`), [page.after, sessionId])) as { seq: number }[]) : [];
    if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a turn of this session');
    anchorSeq = anchor.seq;
  }
  const from = anchorSeq === null ? '' : `AND seq ${page.order === 'desc' ? '<' : '>'} $3`;
  const rows = (await manager.query(
    prepared(`SELECT id, trace_id, created_at FROM turns WHERE session_id = $1 AND trace_id IS NOT NULL ${from} ORDER BY seq ${page.order === 'desc' ? 'DESC' : 'ASC'} LIMIT $2`),
    anchorSeq === null ? [sessionId, page.limit + 1] : [sessionId, page.limit + 1, anchorSeq],
  )) as { id: string; trace_id: string; created_at: Date }[];
  return toPage(
    rows.map((row) => ({ id: row.id, traceId: row.trace_id, createdAt: row.created_at })),
    page.limit,
  );
}
