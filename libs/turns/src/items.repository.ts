import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { isUuid, newId, type Page, type PageQuery, prepared, preparedUpTo, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { ItemEntity } from './entities.js';

export type NewItem = Omit<ItemEntity, 'id' | 'seq'> & { id?: string };

/** The `items` table: a session's durable history, in per-session sequence order. */
@Injectable()
export class ItemsRepository {
  constructor(@InjectRepository(ItemEntity) private readonly items: Repository<ItemEntity>) {}

  /** Items take consecutive per-session sequence numbers starting at firstSeq. */
  async insertItems(manager: EntityManager, firstSeq: number, items: NewItem[]): Promise<ItemEntity[]> {
    const rows = items.map((item, index) => manager.create(ItemEntity, { ...item, id: item.id ?? newId(), seq: String(firstSeq + index) }));
    if (rows.length === 0) return rows;
    const values: unknown[] = [];
    const tuples = rows.map((row, i) => {
      values.push(row.id, row.sessionId, row.turnId, row.runId, row.inputId, row.seq, row.type, row.role, row.status, JSON.stringify(row.content), row.phase, row.createdAt);
      return `(${Array.from({ length: 12 }, (_, j) => `$${i * 12 + j + 1}`).join(', ')})`;
    });
    await manager.query(
      preparedUpTo(rows.length, `INSERT INTO items (id, session_id, turn_id, run_id, input_id, seq, type, role, status, content, phase, created_at) VALUES ${tuples.join(', ')}`),
      values,
    );
    return rows;
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
   * The model's conversation context in history order: the session's latest items, and always every
   * item of the current turn (a turn with many tool calls must not push its own request out).
   */
  async contextItems(manager: EntityManager, sessionId: string, turnId: string, limit: number): Promise<ItemEntity[]> {
    const recent = await this.recentItems(manager, sessionId, limit);
    // Only a turn whose items fill the whole window may have older ones outside it.
    if (recent.length < limit || recent[0]?.turnId !== turnId) return recent;
    const own = await manager.getRepository(ItemEntity).find({ where: { turnId }, order: { seq: 'ASC' } });
    const byId = new Map([...recent, ...own].map((item) => [item.id, item]));
    return [...byId.values()].sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
  }

  /** The latest messages of the session in history order: the model's conversation context. */
  async recentItems(manager: EntityManager, sessionId: string, limit: number): Promise<ItemEntity[]> {
    const rows = await manager
      .getRepository(ItemEntity)
      .createQueryBuilder('i')
      .where('i.session_id = :sessionId', { sessionId })
      .orderBy('i.seq', 'DESC')
      .limit(limit)
      .getMany();
    return rows.reverse();
  }

  /** Items of the session, or of one turn when turnId is given; the cursor must belong to that scope. */
  async listItems(sessionId: string, turnId: string | null, page: PageQuery): Promise<Page<ItemEntity>> {
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
