import type { EntityManager } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { ITEM_COLUMNS, itemFromRow } from './item-rows.js';
import { type ItemEntity, RunEntity, type TurnContext, TurnEntity } from './turn.entities.js';

/**
 * The history reads of a fork. A fork copies no rows: its history is its own items, turns and runs,
 * then each ancestor's own rows up to that ancestor's bound (`session_lineage`). Seq ranges never
 * overlap along a lineage (a fork's own seqs start above everything it inherits, and an ancestor's
 * bound lies below its child's own seqs), so the union ordered by seq is the history, and every
 * page is one index range scan per segment (`UNIQUE (session_id, seq)`) stopping at the page size:
 * at most (depth + 1) * (limit + 1) index tuples, whatever the history's length.
 *
 * A session that is not a fork (`forkItemSeq === null`) never comes here: its reads keep their own
 * statements. Ancestors' `deleted_at` is not read: deleting a source never changes a fork's history.
 */

/** What a history read needs of the session: whether it is a fork. A SessionEntity is one. */
export interface HistoryScope {
  id: string;
  /** Non-null for a fork: the last item seq it inherits. */
  forkItemSeq: string | null;
}

/**
 * The segments of `sid` as rows (sid, hi, thi): the session itself unbounded, then its ancestors
 * with their inclusive item (hi) and turn (thi) bounds. `sid` is the placeholder of the session id.
 */
function seg(sid: string): string {
  return `seg AS (
    SELECT CAST(${sid} AS uuid) AS sid, CAST(9223372036854775807 AS bigint) AS hi, 2147483647 AS thi
    UNION ALL SELECT ancestor_id, upto_item_seq, upto_turn_seq FROM session_lineage WHERE session_id = CAST(${sid} AS uuid))`;
}

type Table = 'items' | 'turns';
const BOUND: Record<Table, string> = { items: 'hi', turns: 'thi' };
const NOUN: Record<Table, string> = { items: 'an item', turns: 'a turn' };

/** The seq of the cursor's row when the fork shows it (its own, or an ancestor's within the bound); else 400 invalid_cursor. */
async function anchorSeq(manager: EntityManager, table: Table, sessionId: string, after: string): Promise<string> {
  const rows = isUuid(after)
    ? ((await manager.query(prepared(`WITH ${seg('$1')} SELECT r.seq FROM ${table} r JOIN seg ON seg.sid = r.session_id AND r.seq <= seg.${BOUND[table]} WHERE r.id = $2`), [sessionId, after])) as {
        seq: string | number;
      }[])
    : [];
  if (!rows[0]) throw new DomainError('invalid_cursor', `The \`after\` cursor is not ${NOUN[table]} of this session`);
  return String(rows[0].seq);
}

/**
 * The ids of one page, in page order: per segment the first limit + 1 rows past the cursor (each an
 * index range scan), then the first limit + 1 of their union.
 */
function pageIds(table: Table, page: PageQuery, hasAnchor: boolean): string {
  const direction = page.order === 'desc' ? 'DESC' : 'ASC';
  const past = hasAnchor ? `AND seq ${page.order === 'desc' ? '<' : '>'} :anchor` : '';
  return `WITH ${seg(':sid')}
    SELECT x.id FROM seg CROSS JOIN LATERAL (
      SELECT id, seq FROM ${table} WHERE session_id = seg.sid AND seq <= seg.${BOUND[table]} ${past} ORDER BY seq ${direction} LIMIT :n) x
    ORDER BY x.seq ${direction} LIMIT :n`;
}

/**
 * A page of a fork's items: the inherited ones, then its own, in seq order. One prepared statement
 * (a text per order and cursor) whose lateral scans select the item columns themselves, mapped as
 * the repository's other raw reads are. Why prepared: planned with the values, each lateral scan is
 * estimated at the table's average rows per session (a few, on a table of many small sessions), below
 * the page size, so the planner reads the whole segment by bitmap and sorts it (EXPLAIN ANALYZE on a
 * fork of a 10,000-item source: Bitmap Heap Scan rows=10,005 then Sort, about 4 ms, growing with the
 * history); the generic plan a prepared statement settles on after its first calls knows no page
 * size and walks `items_session_id_seq_key` backward, stopping at the limit (0.07 ms, 9 buffers),
 * like the source's own page. No `IN` over a page of ids either: one index probe less per row.
 */
export async function listItemsInLineage(manager: EntityManager, sessionId: string, page: PageQuery): Promise<Page<ItemEntity>> {
  const anchor = page.after !== undefined ? await anchorSeq(manager, 'items', sessionId, page.after) : undefined;
  const direction = page.order === 'desc' ? 'DESC' : 'ASC';
  const past = anchor !== undefined ? `AND seq ${page.order === 'desc' ? '<' : '>'} $3` : '';
  const rows = (await manager.query(
    prepared(`WITH ${seg('$1')}
      SELECT ${ITEM_COLUMNS} FROM seg CROSS JOIN LATERAL (
        SELECT ${ITEM_COLUMNS} FROM items WHERE session_id = seg.sid AND seq <= seg.hi ${past} ORDER BY seq ${direction} LIMIT $2) x
      ORDER BY x.seq ${direction} LIMIT $2`),
    anchor !== undefined ? [sessionId, page.limit + 1, anchor] : [sessionId, page.limit + 1],
  )) as Record<string, unknown>[];
  return toPage(rows.map(itemFromRow), page.limit);
}

/** A page of a fork's turns: the inherited ones, then its own, in seq order. */
export async function listTurnsInLineage(manager: EntityManager, sessionId: string, page: PageQuery): Promise<Page<TurnEntity>> {
  const anchor = page.after !== undefined ? await anchorSeq(manager, 'turns', sessionId, page.after) : undefined;
  const rows = await manager
    .getRepository(TurnEntity)
    .createQueryBuilder('t')
    .where(`t.id IN (${pageIds('turns', page, anchor !== undefined)})`, { sid: sessionId, anchor, n: page.limit + 1 })
    .orderBy('t.seq', page.order === 'desc' ? 'DESC' : 'ASC')
    .getMany();
  return toPage(rows, page.limit);
}

/** A turn the fork shows: its own, or an ancestor's within that ancestor's turn bound; null otherwise. */
export async function turnInLineage(manager: EntityManager, sessionId: string, turnId: string): Promise<TurnEntity | null> {
  if (!isUuid(turnId)) return null;
  return manager
    .getRepository(TurnEntity)
    .createQueryBuilder('t')
    .where('t.id = :turnId', { turnId })
    .andWhere(
      `(t.session_id = :sid OR EXISTS (SELECT 1 FROM session_lineage l WHERE l.session_id = :sid AND l.ancestor_id = t.session_id AND t.seq <= l.upto_turn_seq))`,
      { sid: sessionId },
    )
    .getOne();
}

/** A run the fork shows: its own, or an ancestor's whose turn lies within that ancestor's turn bound; null otherwise. */
export async function runInLineage(manager: EntityManager, sessionId: string, runId: string): Promise<RunEntity | null> {
  if (!isUuid(runId)) return null;
  return manager
    .getRepository(RunEntity)
    .createQueryBuilder('r')
    .where('r.id = :runId', { runId })
    .andWhere(
      `(r.session_id = :sid OR EXISTS (SELECT 1 FROM session_lineage l JOIN turns t ON t.id = r.turn_id
        WHERE l.session_id = :sid AND l.ancestor_id = r.session_id AND t.seq <= l.upto_turn_seq))`,
      { sid: sessionId },
    )
    .getOne();
}

/** The context of the latest turn that called a model, the fork's own or else one it inherits (what `/state` shows before its first own call). */
export async function latestContextInLineage(manager: EntityManager, sessionId: string): Promise<TurnContext | null> {
  const rows = (await manager.query(
    `WITH ${seg('$1')} SELECT c.context FROM seg CROSS JOIN LATERAL (
       SELECT seq, context FROM turns WHERE session_id = seg.sid AND seq <= seg.thi AND context IS NOT NULL ORDER BY seq DESC LIMIT 1) c
     ORDER BY c.seq DESC LIMIT 1`,
    [sessionId],
  )) as { context: TurnContext }[];
  return rows[0]?.context ?? null;
}
