import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { isUuid, newId, type Page, type PageQuery, toPage } from '#libs/database';
import { ApiError } from '#libs/errors';
import { SessionEntity } from './session.entity.js';

export interface NewSession {
  ownerId: string;
  agentId: string;
  model: string;
  toolApprovalMode: string;
  instructions: string;
  title: string;
  projectId: string | null;
}

export interface SessionFilter {
  agentId?: string;
  archived?: boolean;
  isPinned?: boolean;
}

/**
 * The session row: ownership, configuration snapshot, presentation flags and the per-session
 * counters. Its row lock is the session lock every state change of the session takes first.
 */
@Injectable()
export class SessionsService {
  constructor(@InjectRepository(SessionEntity) private readonly sessions: Repository<SessionEntity>) {}

  async create(manager: EntityManager, input: NewSession): Promise<SessionEntity> {
    const now = new Date();
    const row = manager.create(SessionEntity, {
      ...input,
      id: newId(),
      isPinned: false,
      archived: false,
      unread: false,
      queuePaused: false,
      inputSeq: '0',
      itemSeq: '0',
      turnSeq: 0,
      createdAt: now,
      lastActiveAt: now,
      updatedAt: now,
    });
    await manager.insert(SessionEntity, row);
    return row;
  }

  /** Another owner's session is indistinguishable from a missing one. */
  async getVisible(ownerId: string, sessionId: string, manager?: EntityManager): Promise<SessionEntity> {
    const repo = manager ? manager.getRepository(SessionEntity) : this.sessions;
    const row = isUuid(sessionId) ? await repo.findOneBy({ id: sessionId, ownerId }) : null;
    if (!row) throw ApiError.notFound(`Session ${sessionId}`);
    return row;
  }

  /** SELECT … FOR UPDATE: serialises inputs, claims and settlements of one session. */
  async lock(manager: EntityManager, sessionId: string, ownerId?: string): Promise<SessionEntity> {
    const row = isUuid(sessionId)
      ? await manager.getRepository(SessionEntity).findOne({
          where: ownerId ? { id: sessionId, ownerId } : { id: sessionId },
          lock: { mode: 'pessimistic_write' },
        })
      : null;
    if (!row) throw ApiError.notFound(`Session ${sessionId}`);
    return row;
  }

  /** Next value of the per-session input sequence; call under the session lock. */
  async nextInputSeq(manager: EntityManager, sessionId: string): Promise<number> {
    const rows = (await manager.query(`UPDATE sessions SET input_seq = input_seq + 1 WHERE id = $1 RETURNING input_seq`, [sessionId])) as [
      { input_seq: string }[],
      number,
    ];
    return Number(rows[0][0]?.input_seq);
  }

  /** Reserves `count` consecutive item sequence numbers; returns the first. */
  async reserveItemSeqs(manager: EntityManager, sessionId: string, count: number): Promise<number> {
    const rows = (await manager.query(`UPDATE sessions SET item_seq = item_seq + $2 WHERE id = $1 RETURNING item_seq`, [sessionId, count])) as [
      { item_seq: string }[],
      number,
    ];
    return Number(rows[0][0]?.item_seq) - count + 1;
  }

  async nextTurnSeq(manager: EntityManager, sessionId: string): Promise<number> {
    const rows = (await manager.query(`UPDATE sessions SET turn_seq = turn_seq + 1 WHERE id = $1 RETURNING turn_seq`, [sessionId])) as [
      { turn_seq: number }[],
      number,
    ];
    return Number(rows[0][0]?.turn_seq);
  }

  /** Work happened (receipt, consumption, run): last_active_at moves, presentation updates never do. */
  async touch(manager: EntityManager, sessionId: string, at: Date, markUnread = false): Promise<void> {
    await manager.query(
      `UPDATE sessions SET last_active_at = GREATEST(last_active_at, $2), unread = unread OR $3 WHERE id = $1`,
      [sessionId, at, markUnread],
    );
  }

  async list(ownerId: string, filter: SessionFilter, page: PageQuery): Promise<Page<SessionEntity>> {
    const qb = this.sessions.createQueryBuilder('s').where('s.owner_id = :ownerId', { ownerId });
    if (filter.agentId !== undefined) qb.andWhere('s.agent_id = :agentId', { agentId: filter.agentId });
    if (filter.archived !== undefined) qb.andWhere('s.archived = :archived', { archived: filter.archived });
    if (filter.isPinned !== undefined) qb.andWhere('s.is_pinned = :isPinned', { isPinned: filter.isPinned });
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? await this.sessions.findOneBy({ id: page.after, ownerId }) : null;
      if (!anchor) throw new ApiError('invalid_cursor', 'The `after` cursor is not a session of this caller');
      const op = page.order === 'desc' ? '<' : '>';
      qb.andWhere(`(s.created_at, s.id) ${op} (:anchorAt, :anchorId)`, { anchorAt: anchor.createdAt, anchorId: anchor.id });
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = await qb
      .orderBy('s.created_at', direction)
      .addOrderBy('s.id', direction)
      .limit(page.limit + 1)
      .getMany();
    return toPage(rows, page.limit);
  }
}
