import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, In, type Repository } from 'typeorm';
import { newId } from '#libs/database';
import { type FrozenInputConfig, InputEntity, type InputMessage, type InputMode } from './input.entity.js';

export interface NewInput {
  sessionId: string;
  receivedSeq: number;
  mode: InputMode;
  messages: InputMessage[];
  attachmentFileIds: string[];
  config: FrozenInputConfig;
  receivedAt: Date;
}

/** The durable input queue of each session, ordered by the per-session received sequence. */
@Injectable()
export class InputsService {
  constructor(@InjectRepository(InputEntity) private readonly inputs: Repository<InputEntity>) {}

  async insert(manager: EntityManager, input: NewInput): Promise<InputEntity> {
    const row = manager.create(InputEntity, {
      id: newId(),
      sessionId: input.sessionId,
      receivedSeq: String(input.receivedSeq),
      mode: input.mode,
      status: 'pending',
      messages: input.messages,
      attachmentFileIds: input.attachmentFileIds,
      config: input.config,
      turnId: null,
      runId: null,
      receivedAt: input.receivedAt,
      consumedAt: null,
      cancelledAt: null,
    });
    // Raw SQL on the hottest write: the query builder's per-call SQL generation showed in profiles.
    await manager.query(
      `INSERT INTO inputs (id, session_id, received_seq, mode, status, messages, attachment_file_ids, config, received_at)
       VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7, $8)`,
      [row.id, row.sessionId, row.receivedSeq, row.mode, JSON.stringify(row.messages), JSON.stringify(row.attachmentFileIds), JSON.stringify(row.config), row.receivedAt],
    );
    return row;
  }

  /** The queue head: steer inputs before follow-ups, each group in received order. Call under the session lock. */
  async head(manager: EntityManager, sessionId: string): Promise<InputEntity | null> {
    return manager
      .getRepository(InputEntity)
      .createQueryBuilder('i')
      .where('i.session_id = :sessionId AND i.status = :status', { sessionId, status: 'pending' })
      .orderBy(`CASE WHEN i.mode = 'steer' THEN 0 ELSE 1 END`)
      .addOrderBy('i.received_seq', 'ASC')
      .limit(1)
      .getOne();
  }

  /** Whether the session has any pending input (no lock: a hint for whether to claim). */
  async hasPending(sessionId: string): Promise<boolean> {
    const rows = (await this.inputs.query(`SELECT 1 FROM inputs WHERE session_id = $1 AND status = 'pending' LIMIT 1`, [sessionId])) as unknown[];
    return rows.length > 0;
  }

  async markConsumed(manager: EntityManager, inputIds: string[], turnId: string, runId: string, at: Date): Promise<void> {
    await manager.update(InputEntity, { id: In(inputIds), status: 'pending' }, { status: 'consumed', turnId, runId, consumedAt: at });
  }

  /** Sessions holding inputs that have waited longer than the grace period: candidates for a lost nudge. */
  async sessionsWithWaitingInputs(olderThan: Date, limit: number): Promise<string[]> {
    const rows = (await this.inputs.query(
      `SELECT DISTINCT session_id FROM inputs WHERE status = 'pending' AND received_at < $1 LIMIT $2`,
      [olderThan, limit],
    )) as { session_id: string }[];
    return rows.map((row) => row.session_id);
  }
}
