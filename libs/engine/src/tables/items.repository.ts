import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { isUuid, newId, type Page, type PageQuery, prepared, preparedUpTo, type SqlFragment, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { ItemEntity } from './turn.entities.js';
import { ITEM_COLUMNS, itemFromRow } from './item-rows.js';
import { itemTokensIfLoaded } from '../views/item-tokens.js';
import { type HistoryScope, listItemsInLineage } from './lineage-reads.js';

/** What a model context is built from (ItemsRepository.contextItems). */
export interface ContextItems {
  /** The latest compaction of the session: its summary opens the context. */
  compaction: ItemEntity | null;
  /** The latest user message when the compaction's boundary passed it (shown after the summary). */
  pinned: ItemEntity | null;
  /** Every item from the boundary on, in history order. */
  items: ItemEntity[];
}

/** `tokens`: counted before the writing transaction (a large tool output), else counted here when the tokenizer is loaded. */
export type NewItem = Omit<ItemEntity, 'id' | 'seq' | 'tokens'> & { id?: string; tokens?: number | null };

/** The `items` table: a session's durable history, in per-session sequence order. */
@Injectable()
export class ItemsRepository {
  constructor(@InjectRepository(ItemEntity) private readonly items: Repository<ItemEntity>) {}

  /** Items take consecutive per-session sequence numbers starting at firstSeq. */
  async insertItems(manager: EntityManager, firstSeq: number, items: NewItem[]): Promise<ItemEntity[]> {
    const { rows, write } = insertItemsWrite(firstSeq, items);
    if (write) await manager.query(preparedUpTo(rows.length, write.sql), write.params);
    return rows;
  }

  /**
   * Ends a command_execution item written in progress: its status and what the command did
   * (`ending`: exit_code, output, duration_ms, cwd) merged into its record. Null when it is not in
   * progress (already ended) or not there.
   */
  async endCommand(manager: EntityManager, id: string, status: 'completed' | 'incomplete', ending: Record<string, unknown>): Promise<ItemEntity | null> {
    const rows = (await manager.query(
      prepared(`UPDATE items SET status = $2, content = jsonb_set(content, '{0,command_execution}', (content->0->'command_execution') || $3::jsonb)
       WHERE id = $1 AND status = 'in_progress' RETURNING ${ITEM_COLUMNS}`),
      [id, status, JSON.stringify(ending)],
    )) as [Record<string, unknown>[], number];
    const row = rows[0]?.[0];
    return row ? itemFromRow(row) : null;
  }

  /**
   * Ends the commands of a turn still in progress (the turn ended first: cancelled or failed
   * mid-command) as incomplete, `output` saying why. The ended items.
   */
  async endRunningCommands(manager: EntityManager, turnId: string, output: string): Promise<ItemEntity[]> {
    const [rows] = (await manager.query(
      prepared(`UPDATE items SET status = 'incomplete', content = jsonb_set(content, '{0,command_execution}', (content->0->'command_execution') || jsonb_build_object('output', $2::text))
       WHERE turn_id = $1 AND type = 'command_execution' AND status = 'in_progress' RETURNING ${ITEM_COLUMNS}`),
      [turnId, output],
    )) as [Record<string, unknown>[], number];
    return rows.map(itemFromRow);
  }

  /**
   * What a command in a session's workspace runs as: the session's owner and workdir (its
   * workspace), and its command_execution item's output index (null when the item is not there).
   */
  async commandScope(sessionId: string, itemId: string): Promise<{ ownerId: string; workdirId: string; outputIndex: number | null } | null> {
    const rows = (await this.items.query(
      prepared(`SELECT s.owner_id, s.workdir_id, (SELECT (i.content->0->'command_execution'->>'output_index')::int FROM items i WHERE i.id = $2) AS output_index
       FROM sessions s WHERE s.id = $1`),
      [sessionId, itemId],
    )) as { owner_id: string; workdir_id: string; output_index: number | null }[];
    const row = rows[0];
    return row ? { ownerId: row.owner_id, workdirId: row.workdir_id, outputIndex: row.output_index ?? null } : null;
  }

  /** Which of these item ids are already written. */
  async existingItemIds(manager: EntityManager, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = (await manager.query(prepared(`SELECT id FROM items WHERE id = ANY($1::uuid[])`), [ids])) as { id: string }[];
    return rows.map((row) => row.id);
  }

  /** How many items the turn has: the output index of its next item. */
  async countItems(manager: EntityManager, turnId: string): Promise<number> {
    const rows = (await manager.query(prepared(`SELECT count(*)::int AS n FROM items WHERE turn_id = $1`), [turnId])) as { n: number }[];
    return rows[0]?.n ?? 0;
  }

  async itemsOfInput(sessionId: string, inputId: string): Promise<ItemEntity[]> {
    return this.items.find({ where: { sessionId, inputId }, order: { seq: 'ASC' } });
  }

  async outputOfRun(runId: string): Promise<ItemEntity[]> {
    return this.items.find({ where: { runId, role: 'assistant' }, order: { seq: 'ASC' } });
  }

  /**
   * What a model context is built from, in one statement whatever the session's length: the
   * session's latest compaction (its summary), every item from that compaction's boundary on (its
   * first kept item, else what follows it; compaction items left out), and the latest user message
   * when the boundary passed it (it is always shown verbatim). Cost grows with the items since the
   * last compaction, not with the session.
   *
   * A fork's history is its own items and, for each `session_lineage` row, the ancestor's own items
   * up to that row's bound; nothing is copied. Each part therefore has the own-session branch
   * (unchanged) and an ancestor branch, `l CROSS JOIN LATERAL (...)`, bounded by `upto_item_seq`.
   * Item seqs are disjoint and increasing along a lineage (a fork's own seqs are above everything it
   * inherits), so one seq order serves every session: the latest compaction over all branches is the
   * one in force (a source's compaction after the fork point lies beyond the bound and is not seen;
   * a fork's own compaction wins by seq), and its boundary `b`, found by primary key in whichever
   * session holds the first kept item, cuts every branch alike.
   *
   * A session that is not a fork has no lineage row: `l` is one probe of the lineage primary key
   * that finds nothing, materialized once and scanned by the three ancestor branches, whose lateral
   * index scans are then "never executed". EXPLAIN (ANALYZE) on a non-fork with 2,100 items since
   * its compaction (5,000 lineage rows of others): Index Scan on session_lineage_pkey, rows=0, 2
   * buffers; the own branches keep today's plans (items_compactions_idx, the first kept item by
   * primary key, the (session_id, seq) range); 85 buffers against 83 for the statement without the
   * ancestor branches, the same time (about 1.1 ms) and the same rows. The echo turn's statement
   * count is unchanged (test/budget/turn-budget.test.ts).
   */
  async contextItems(manager: EntityManager, sessionId: string): Promise<ContextItems> {
    const rows = (await manager.query(
      prepared(`WITH l AS MATERIALIZED (
         SELECT ancestor_id, upto_item_seq FROM session_lineage WHERE session_id = $1
       ), c AS (
         SELECT id, seq, content FROM (
           (SELECT id, seq, content FROM items WHERE session_id = $1 AND type = 'compaction' ORDER BY seq DESC LIMIT 1)
           UNION ALL SELECT a.id, a.seq, a.content FROM l CROSS JOIN LATERAL (
             SELECT id, seq, content FROM items WHERE session_id = l.ancestor_id AND type = 'compaction' AND seq <= l.upto_item_seq ORDER BY seq DESC LIMIT 1) a
         ) cs ORDER BY seq DESC LIMIT 1
       ), b AS (
         SELECT coalesce((SELECT k.seq FROM items k, c WHERE k.id = (c.content->0->'compaction'->>'first_kept_item_id')::uuid), (SELECT seq + 1 FROM c), 0) AS seq
       ), u AS (
         SELECT ${ITEM_COLUMNS} FROM (
           (SELECT ${ITEM_COLUMNS} FROM items WHERE session_id = $1 AND role = 'user' ORDER BY seq DESC LIMIT 1)
           UNION ALL SELECT ${ITEM_COLUMNS} FROM l CROSS JOIN LATERAL (
             SELECT ${ITEM_COLUMNS} FROM items WHERE session_id = l.ancestor_id AND role = 'user' AND seq <= l.upto_item_seq ORDER BY seq DESC LIMIT 1) a
         ) us ORDER BY seq DESC LIMIT 1
       )
       SELECT ${ITEM_COLUMNS}, 'window' AS part FROM items WHERE session_id = $1 AND seq >= (SELECT seq FROM b) AND type <> 'compaction'
       UNION ALL SELECT ${ITEM_COLUMNS}, 'window' FROM l CROSS JOIN LATERAL (
         SELECT ${ITEM_COLUMNS} FROM items WHERE session_id = l.ancestor_id AND seq >= (SELECT seq FROM b) AND seq <= l.upto_item_seq AND type <> 'compaction') w
       UNION ALL SELECT ${ITEM_COLUMNS}, 'compaction' FROM items WHERE id = (SELECT id FROM c)
       UNION ALL SELECT ${ITEM_COLUMNS}, 'latest_user' FROM u WHERE u.seq < (SELECT seq FROM b)
       ORDER BY seq`),
      [sessionId],
    )) as (Record<string, unknown> & { part: 'window' | 'compaction' | 'latest_user' })[];
    const context: ContextItems = { compaction: null, pinned: null, items: [] };
    for (const row of rows) {
      const item = itemFromRow(row);
      if (row.part === 'compaction') context.compaction = item;
      else if (row.part === 'latest_user') context.pinned = item;
      else context.items.push(item);
    }
    return context;
  }

  /** The session's items written after `afterSeq`, in history order (what a cached context lacks). */
  async itemsAfter(manager: EntityManager, sessionId: string, afterSeq: string): Promise<ItemEntity[]> {
    const rows = (await manager.query(prepared(`SELECT ${ITEM_COLUMNS} FROM items WHERE session_id = $1 AND seq > $2 ORDER BY seq`), [sessionId, afterSeq])) as Record<
      string,
      unknown
    >[];
    return rows.map(itemFromRow);
  }

  /** Items of the session, or of one turn when turnId is given (`session`: the turn's own); the cursor must belong to that scope. */
  async listItems(session: HistoryScope, turnId: string | null, page: PageQuery): Promise<Page<ItemEntity>> {
    // A fork's history runs through its lineage; a turn's items all lie on one side of a bound, so a turn's need none.
    if (session.forkItemSeq !== null && turnId === null) return listItemsInLineage(this.items.manager, session.id, page);
    const sessionId = session.id;
    const qb = this.items.createQueryBuilder('i').where('i.session_id = :sessionId', { sessionId });
    if (turnId !== null) qb.andWhere('i.turn_id = :turnId', { turnId });
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? await this.items.findOneBy({ id: page.after, sessionId }) : null;
      if (!anchor || (turnId !== null && anchor.turnId !== turnId)) {
        throw new DomainError('invalid_cursor', `The \`after\` cursor is not an item of this ${turnId ? 'turn' : 'session'}`);
      }
      qb.andWhere(`i.seq ${page.order === 'desc' ? '<' : '>'} :seq`, { seq: anchor.seq });
    }
    const rows = await qb
      .orderBy('i.seq', page.order === 'desc' ? 'DESC' : 'ASC')
      .limit(page.limit + 1)
      .getMany();
    return toPage(rows, page.limit);
  }
}

/** Items with consecutive sequence numbers from `firstSeq`, as entities and as one INSERT (a fragment of a composed write; null for none). */
export function insertItemsWrite(firstSeq: number, items: NewItem[]): { rows: ItemEntity[]; write: SqlFragment | null } {
  const rows = items.map((item, index) =>
    Object.assign(new ItemEntity(), { ...item, id: item.id ?? newId(), seq: String(firstSeq + index), tokens: item.tokens ?? itemTokensIfLoaded(item.content) }),
  );
  if (rows.length === 0) return { rows, write: null };
  const params: unknown[] = [];
  const tuples = rows.map((row, i) => {
    params.push(row.id, row.sessionId, row.turnId, row.runId, row.inputId, row.seq, row.type, row.role, row.status, JSON.stringify(row.content), row.phase, row.tokens, row.createdAt);
    return `(${Array.from({ length: 13 }, (_, j) => `$${i * 13 + j + 1}`).join(', ')})`;
  });
  return {
    rows,
    write: { sql: `INSERT INTO items (id, session_id, turn_id, run_id, input_id, seq, type, role, status, content, phase, tokens, created_at) VALUES ${tuples.join(', ')}`, params, rows: rows.length },
  };
}
