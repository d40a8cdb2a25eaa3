import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, In, type Repository } from 'typeorm';
import { isUuid, newId, type Page, type PageQuery, toPage } from '#libs/database';
import { ApiError } from '#libs/errors';
import { ItemEntity, type PublicError, RunEntity, type RunStatus, TurnEntity, type TurnStatus } from './entities.js';

export interface NewTurn {
  turnId: string;
  runId: string;
  sessionId: string;
  seq: number;
  agentId: string;
  model: string;
  inputIds: string[];
  config: object;
  leaseOwner: string;
  leaseMs: number;
  at: Date;
}

export interface SettleSpec {
  runId: string;
  /** The lease owner that must hold the run; null settles a run whose lease has expired (recovery). */
  owner: string | null;
  runStatus: RunStatus;
  turn: TurnEntity;
  turnStatus: Extract<TurnStatus, 'completed' | 'failed' | 'cancelled'>;
  resultRunId: string | null;
  error: PublicError | null;
  at: Date;
}

export interface YieldSpec {
  runId: string;
  owner: string;
  nextRunId: string;
  turnId: string;
  sessionId: string;
  inputIds: string[];
  leaseMs: number;
  at: Date;
}

export type NewItem = Omit<ItemEntity, 'id' | 'seq'> & { id?: string };

/**
 * Turns, runs and items. A run's output and final state may only be written by its lease owner:
 * every settlement is conditioned on (lease_owner, status = in_progress).
 */
@Injectable()
export class TurnsService {
  constructor(
    @InjectRepository(TurnEntity) private readonly turns: Repository<TurnEntity>,
    @InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>,
    @InjectRepository(ItemEntity) private readonly items: Repository<ItemEntity>,
  ) {}

  /** Creates an in-progress turn with its first run, leased to the caller. */
  async startTurn(manager: EntityManager, spec: NewTurn): Promise<{ turn: TurnEntity; run: RunEntity }> {
    const { turnId, runId } = spec;
    const turn = manager.create(TurnEntity, {
      id: turnId,
      sessionId: spec.sessionId,
      seq: spec.seq,
      status: 'in_progress',
      agentId: spec.agentId,
      model: spec.model,
      currentRunId: runId,
      resultRunId: null,
      waitpoint: null,
      cancellationPending: false,
      error: null,
      usage: null,
      createdAt: spec.at,
      startedAt: spec.at,
      completedAt: null,
    });
    const run = manager.create(RunEntity, {
      id: runId,
      turnId,
      sessionId: spec.sessionId,
      seq: 1,
      status: 'in_progress',
      inputIds: spec.inputIds,
      model: spec.model,
      config: spec.config,
      resumeFromRunId: null,
      leaseOwner: spec.leaseOwner,
      leaseExpiresAt: new Date(spec.at.getTime() + spec.leaseMs),
      createdAt: spec.at,
      startedAt: spec.at,
      completedAt: null,
      error: null,
      usage: null,
    });
    // One statement for both rows: the turn start is on every turn's critical path.
    await manager.query(
      `WITH t AS (
         INSERT INTO turns (id, session_id, seq, status, agent_id, model, current_run_id, created_at, started_at)
         VALUES ($1, $2, $3, 'in_progress', $4, $5, $6, $7, $7)
       )
       INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, lease_owner, lease_expires_at, created_at, started_at)
       VALUES ($6, $1, $2, 1, 'in_progress', $8, $5, $9, $10, $11, $7, $7)`,
      [turnId, spec.sessionId, spec.seq, spec.agentId, spec.model, runId, spec.at, spec.inputIds, JSON.stringify(spec.config), spec.leaseOwner, run.leaseExpiresAt],
    );
    return { turn, run };
  }

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
      `INSERT INTO items (id, session_id, turn_id, run_id, input_id, seq, type, role, status, content, phase, created_at) VALUES ${tuples.join(', ')}`,
      values,
    );
    return rows;
  }

  /**
   * Extends the lease and reports whether the turn was asked to cancel. `held: false` means the
   * run is no longer ours (settled elsewhere or taken over).
   */
  async renewLease(runId: string, owner: string, leaseMs: number): Promise<{ held: boolean; cancelRequested: boolean }> {
    const [rows] = (await this.runs.query(
      `UPDATE runs r SET lease_expires_at = now() + make_interval(secs => $3::double precision / 1000)
       FROM turns t WHERE r.id = $1 AND r.lease_owner = $2 AND r.status = 'in_progress' AND t.id = r.turn_id
       RETURNING t.cancellation_pending`,
      [runId, owner, leaseMs],
    )) as [{ cancellation_pending: boolean }[], number];
    return { held: rows.length > 0, cancelRequested: rows[0]?.cancellation_pending ?? false };
  }

  /**
   * Yields the caller's run at a safe boundary and starts the next run of the same turn for the
   * given inputs (a steer batch), leased to the caller. Returns null when the run was not ours.
   */
  async yieldRun(manager: EntityManager, spec: YieldSpec): Promise<RunEntity | null> {
    const leaseExpiresAt = new Date(spec.at.getTime() + spec.leaseMs);
    // A statement whose top level is SELECT answers plain rows (UPDATE … RETURNING answers [rows, count]).
    const rows = (await manager.query(
      `WITH old AS (
         UPDATE runs SET status = 'yielded', completed_at = $3, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $1 AND status = 'in_progress' AND lease_owner = $2
         RETURNING turn_id, session_id, seq, model, config
       ), next AS (
         INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, resume_from_run_id, lease_owner, lease_expires_at, created_at, started_at)
         SELECT $4, turn_id, session_id, seq + 1, 'in_progress', $5, model, config, $1, $2, $6, $3, $3 FROM old
         RETURNING id, turn_id, seq
       ), t AS (
         UPDATE turns SET current_run_id = $4 WHERE id = (SELECT turn_id FROM next)
       )
       SELECT next.seq, old.model, old.config FROM next, old`,
      [spec.runId, spec.owner, spec.at, spec.nextRunId, spec.inputIds, leaseExpiresAt],
    )) as { seq: number; model: string; config: object }[];
    const row = rows[0];
    if (!row) return null;
    return manager.create(RunEntity, {
      id: spec.nextRunId,
      turnId: spec.turnId,
      sessionId: spec.sessionId,
      seq: Number(row.seq),
      status: 'in_progress',
      inputIds: spec.inputIds,
      model: row.model,
      config: row.config,
      resumeFromRunId: spec.runId,
      leaseOwner: spec.owner,
      leaseExpiresAt,
      createdAt: spec.at,
      startedAt: spec.at,
      completedAt: null,
      error: null,
      usage: null,
    });
  }

  /** Marks an active turn as being cancelled; returns it, or null when it is not active any more. */
  async requestCancel(manager: EntityManager, sessionId: string, turnId: string): Promise<TurnEntity | null> {
    if (!isUuid(turnId)) return null;
    const [rows] = (await manager.query(
      `UPDATE turns SET cancellation_pending = true
       WHERE id = $1 AND session_id = $2 AND status IN ('queued', 'in_progress', 'requires_action') RETURNING id`,
      [turnId, sessionId],
    )) as [{ id: string }[], number];
    if (rows.length === 0) return null;
    return manager.getRepository(TurnEntity).findOneByOrFail({ id: turnId });
  }

  /**
   * Settles a run and its turn in one statement, provided the run is still in progress and (when
   * `owner` is given) leased to the caller. Returns the settled turn, or null when the run was not ours.
   */
  async settle(manager: EntityManager, spec: SettleSpec): Promise<TurnEntity | null> {
    const [rows] = (await manager.query(
      `WITH r AS (
         UPDATE runs SET status = $3, completed_at = $4, error = $5, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $1 AND status = 'in_progress' AND (($2::text IS NULL AND lease_expires_at < now()) OR lease_owner = $2)
         RETURNING turn_id
       )
       UPDATE turns SET status = $6, completed_at = $4, result_run_id = $7, current_run_id = NULL, error = $5, cancellation_pending = false
       WHERE id = (SELECT turn_id FROM r) RETURNING id`,
      [spec.runId, spec.owner, spec.runStatus, spec.at, spec.error === null ? null : JSON.stringify(spec.error), spec.turnStatus, spec.resultRunId],
    )) as [{ id: string }[], number];
    if (rows.length === 0) return null;
    return {
      ...spec.turn,
      status: spec.turnStatus,
      completedAt: spec.at,
      resultRunId: spec.resultRunId,
      currentRunId: null,
      error: spec.error,
      cancellationPending: false,
    };
  }

  async findTurn(manager: EntityManager, turnId: string): Promise<TurnEntity | null> {
    if (!isUuid(turnId)) return null;
    return manager.getRepository(TurnEntity).findOneBy({ id: turnId });
  }

  /** Runs whose owner stopped heartbeating. */
  async expiredRuns(limit: number): Promise<RunEntity[]> {
    return this.runs
      .createQueryBuilder('r')
      .where(`r.status = 'in_progress' AND r.lease_expires_at < now()`)
      .orderBy('r.lease_expires_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  async getRun(sessionId: string, runId: string): Promise<RunEntity> {
    const run = isUuid(runId) ? await this.runs.findOneBy({ id: runId, sessionId }) : null;
    if (!run) throw ApiError.notFound(`Run ${runId}`);
    return run;
  }

  async getTurn(sessionId: string, turnId: string): Promise<TurnEntity> {
    const turn = isUuid(turnId) ? await this.turns.findOneBy({ id: turnId, sessionId }) : null;
    if (!turn) throw ApiError.notFound(`Turn ${turnId}`);
    return turn;
  }

  async runsOfTurn(turnId: string): Promise<RunEntity[]> {
    return this.runs.find({ where: { turnId }, order: { seq: 'ASC' } });
  }

  async runsByIds(ids: string[]): Promise<RunEntity[]> {
    if (ids.length === 0) return [];
    return this.runs.find({ where: { id: In(ids) }, order: { createdAt: 'ASC' } });
  }

  async itemsOfInput(sessionId: string, inputId: string): Promise<ItemEntity[]> {
    return this.items.find({ where: { sessionId, inputId }, order: { seq: 'ASC' } });
  }

  async outputOfRun(runId: string): Promise<ItemEntity[]> {
    return this.items.find({ where: { runId, role: 'assistant' }, order: { seq: 'ASC' } });
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

  async listTurns(sessionId: string, page: PageQuery): Promise<Page<TurnEntity>> {
    const qb = this.turns.createQueryBuilder('t').where('t.session_id = :sessionId', { sessionId });
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? await this.turns.findOneBy({ id: page.after, sessionId }) : null;
      if (!anchor) throw new ApiError('invalid_cursor', 'The `after` cursor is not a turn of this session');
      qb.andWhere(`t.seq ${page.order === 'desc' ? '<' : '>'} :seq`, { seq: anchor.seq });
    }
    const rows = await qb
      .orderBy('t.seq', page.order === 'desc' ? 'DESC' : 'ASC')
      .limit(page.limit + 1)
      .getMany();
    return toPage(rows, page.limit);
  }

  /** Items of the session, or of one turn when turnId is given; the cursor must belong to that scope. */
  async listItems(sessionId: string, turnId: string | null, page: PageQuery): Promise<Page<ItemEntity>> {
    const qb = this.items.createQueryBuilder('i').where('i.session_id = :sessionId', { sessionId });
    if (turnId !== null) qb.andWhere('i.turn_id = :turnId', { turnId });
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? await this.items.findOneBy({ id: page.after, sessionId }) : null;
      if (!anchor || (turnId !== null && anchor.turnId !== turnId)) {
        throw new ApiError('invalid_cursor', `The \`after\` cursor is not an item of this ${turnId ? 'turn' : 'session'}`);
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
