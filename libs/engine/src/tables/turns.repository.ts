import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { isUuid, newId, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError, isTransientFailure } from '#libs/errors';
import { type StoredTraceContext, traceIdOf } from '#libs/telemetry';
import { addUsageSql, type LedgerEntry, ledgerDeltaSql, ledgerInsertSql, type LedgerRow } from '#libs/usage';
import { type PublicError, RunEntity, type TurnContext, TurnEntity, type TurnStatus, type Usage, type Waitpoint } from './turn.entities.js';
import { FAILURE_SIDE_EFFECTS_SQL, FAILURE_UNSAFE_EFFECTS_SQL } from '../endings/failure-side-effects.js';
import { type Lease } from '../claims/lease.js';
import { type HistoryScope, latestContextInLineage, listTurnsInLineage, turnInLineage } from './lineage-reads.js';
import type { OpenWaitpointFilter, OpenWaitpointRow } from '../views/operator-reads.js';
import { type TracedTurnRow, type TracedTurnsQuery, tracedTurnsPage } from '../views/traced-turns.js';
import { ACTIVE_TURN_STATUSES, RUN_TRANSITIONS, type SettledStatus, settledStatusSql, statusGuard, TURN_TRANSITIONS } from '../machines/turn-states.js';

/** The ledger rows a settle wrote (its last model call), for the counters after commit. */
const SPENT = `(SELECT coalesce(jsonb_agg(l), '[]'::jsonb) FROM l) AS spent`;

export interface NewTurn {
  turnId: string;
  runId: string;
  sessionId: string;
  seq: number;
  agentId: string;
  model: string;
  inputIds: string[];
  config: object & { trace?: StoredTraceContext };
  leaseOwner: string;
  leaseMs: number;
  at: Date;
  /**
   * The account the turn runs for (the session owner's product user), counted against its cap of
   * running turns; null while no cap is on (such turns are not counted should one be turned on).
   */
  accountId: string | null;
}

export interface SettleSpec {
  /** The lease to settle through; null settles a run nobody holds any more (expired or awaiting takeover). */
  lease: Lease | null;
  runId: string;
  runStatus: SettledStatus;
  turn: TurnEntity;
  /**
   * Why the run failed ({code, message}); settle adds `side_effects`, derived from the turn's
   * committed steps and items, and `retryable` (failureRetryable).
   */
  error: PublicError | null;
  /** The run's shown text becomes an item after settle, in the same transaction (a failed run's incomplete message): output already. */
  outputShown?: boolean;
  /** A completion's model call, recorded as a committed step of the turn (with this id when given: a model request is keyed by it). */
  answer?: { id?: string; input: object; output: object };
  /** The run's last model call, written to the ledger by the same statement and added to the run's and the turn's usage. */
  usage?: LedgerEntry | null;
  /** The context of the run's last model call; null keeps what the turn shows. */
  context?: TurnContext | null;
  at: Date;
  /**
   * Take the session lock in the same statement, first (columns of the session row to return, in
   * `session`): the run and turn rows are locked after it, so they are read as committed then.
   */
  lockSession?: string;
}

/**
 * The `turns` table, and the statements that change a turn together with its runs (start, settle,
 * resume, cancel while waiting): each is one statement, so a turn and its run never disagree.
 */
@Injectable()
export class TurnsRepository {
  constructor(@InjectRepository(TurnEntity) private readonly turns: Repository<TurnEntity>) {}

  /** The session's turn that still holds it (queued, in progress or waiting), if any: the claim gate. */
  async activeTurn(manager: EntityManager, sessionId: string): Promise<TurnEntity | null> {
    if (!isUuid(sessionId)) return null;
    return manager
      .getRepository(TurnEntity)
      .createQueryBuilder('t')
      .where('t.session_id = :sessionId AND t.status IN (:...active)', { sessionId, active: ACTIVE_TURN_STATUSES })
      .getOne();
  }

  /** Creates an in-progress turn with its first run, leased to the caller on the database clock. */
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
      traceId: traceIdOf(spec.config.trace),
      context: null,
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
      leaseExpiresAt: null,
      epoch: 0,
      checkpoint: null,
      createdAt: spec.at,
      startedAt: spec.at,
      completedAt: null,
      error: null,
      usage: null,
    });
    // One statement for both rows (and the run's fencing epoch): the turn start is on every turn's critical path.
    // Without a trace (tracing off) the turn's insert names no trace_id and binds no parameter for it.
    const traced = turn.traceId !== null;
    const params: unknown[] = [turnId, spec.sessionId, spec.seq, spec.agentId, spec.model, runId, spec.at, spec.inputIds, JSON.stringify(spec.config), spec.leaseOwner, spec.leaseMs, spec.accountId];
    if (traced) params.push(turn.traceId);
    const rows = (await manager.query(
      prepared(`WITH t AS (
         INSERT INTO turns (id, session_id, seq, status, agent_id, model, current_run_id, created_at, started_at, account_id${traced ? ', trace_id' : ''})
         VALUES ($1, $2, $3, '${TURN_TRANSITIONS.start.to[0]}', $4, $5, $6, $7, $7, $12${traced ? ', $13' : ''})
       )
       INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, lease_owner, lease_expires_at, epoch, created_at, started_at)
       VALUES ($6, $1, $2, 1, '${RUN_TRANSITIONS.start.to[0]}', $8, $5, $9, $10, now() + make_interval(secs => $11::double precision / 1000),
               (SELECT coalesce(max(epoch), 0) + 1 FROM runs WHERE session_id = $2), $7, $7)
       RETURNING epoch`),
      params,
    )) as { epoch: string }[];
    run.epoch = Number(rows[0]?.epoch);
    return { turn, run };
  }

  /** Marks an active turn as being cancelled; returns it, or null when it is not active any more. */
  async requestCancel(manager: EntityManager, sessionId: string, turnId: string): Promise<TurnEntity | null> {
    if (!isUuid(turnId)) return null;
    const [rows] = (await manager.query(
      prepared(`UPDATE turns SET cancellation_pending = true
       WHERE id = $1 AND session_id = $2 AND ${statusGuard('status', TURN_TRANSITIONS.requestCancel.from)} RETURNING id`),
      [turnId, sessionId],
    )) as [{ id: string }[], number];
    if (rows.length === 0) return null;
    return manager.getRepository(TurnEntity).findOneByOrFail({ id: turnId });
  }

  /**
   * Settles a run and its turn in one statement, through the lease (or, with none, only a run that
   * nobody holds any more). A completion turns into a cancellation when a cancel was accepted
   * first (the client was told the turn would stop), and records its model answer as a committed
   * step. Returns the settled turn, or null when the run was not the caller's to settle.
   */
  async settle(manager: EntityManager, spec: SettleSpec): Promise<{ turn: TurnEntity; runUsage: Usage | null; spent: LedgerRow[]; session?: Record<string, unknown> } | null> {
    // With the session lock: taken first (the one-time filter of cur), and the turn row locked too,
    // so a cancel committed while the lock was awaited is seen (a locked row is read as committed).
    const lock = spec.lockSession ? `s AS (SELECT ${spec.lockSession} FROM sessions WHERE id = $8::uuid FOR UPDATE), ` : '';
    const rows = (await manager.query(
      prepared(`WITH ${lock}cur AS (
         SELECT r.id, r.turn_id, t.cancellation_pending FROM runs r JOIN turns t ON t.id = r.turn_id
         WHERE r.id = $1 AND ${statusGuard('r.status', RUN_TRANSITIONS.settle.from)}
           AND (($2::text IS NULL AND (r.lease_owner IS NULL OR r.lease_expires_at < now())) OR (r.lease_owner = $2 AND r.epoch = $3 AND r.lease_expires_at > now()))
           ${lock ? 'AND EXISTS (SELECT 1 FROM s)' : ''}
         FOR UPDATE OF r${lock ? ', t' : ''}
       ), fin AS (
         SELECT id, turn_id, ${settledStatusSql('cancellation_pending', '$4::text')} AS status FROM cur
       ), l AS (
         ${ledgerInsertSql({ entries: '$11', session: '$8', turn: '(SELECT turn_id FROM cur)', run: '$1', where: 'EXISTS (SELECT 1 FROM cur)' })}
       ), d AS (
         ${ledgerDeltaSql('l')}
       ), rel AS (
         -- What the run's calls reserved of budgets is released with their ledger rows (an index probe; none unless budgeted).
         DELETE FROM budget_reservations WHERE run_id = $1 AND EXISTS (SELECT 1 FROM cur)
       ), err AS (
         SELECT CASE WHEN $6::jsonb IS NULL THEN NULL ELSE $6::jsonb || jsonb_build_object('side_effects', fx.side_effects, 'retryable', $13::boolean AND NOT fx.unsafe_effects) END AS error
         FROM (SELECT ${FAILURE_SIDE_EFFECTS_SQL} AS side_effects, ${FAILURE_UNSAFE_EFFECTS_SQL} AS unsafe_effects FROM cur) fx
       ), r AS (
         UPDATE runs SET status = fin.status, completed_at = $5, error = (SELECT error FROM err), lease_owner = NULL, lease_expires_at = NULL,
                usage = ${addUsageSql('runs.usage', 'd.delta')}
         FROM fin, d WHERE runs.id = fin.id RETURNING runs.turn_id, fin.status, runs.usage
       ), t AS (
         UPDATE turns SET status = r.status, completed_at = $5, result_run_id = CASE WHEN r.status = 'completed' THEN $1::uuid END,
                current_run_id = NULL, error = (SELECT error FROM err), cancellation_pending = false,
                usage = ${addUsageSql('turns.usage', 'd.delta')},
                context = coalesce($12::jsonb, turns.context)
         FROM r, d WHERE turns.id = r.turn_id RETURNING r.status, r.usage AS run_usage, turns.usage AS turn_usage, turns.error
       ), st AS (
         INSERT INTO run_steps (id, run_id, turn_id, session_id, seq, kind, status, input, output, created_at, completed_at)
         SELECT $7, $1, r.turn_id, $8, (SELECT coalesce(max(seq), 0) + 1 FROM run_steps WHERE turn_id = r.turn_id), 'model_call', 'completed', $9::jsonb, $10::jsonb, $5, $5
         FROM r WHERE r.status = 'completed' AND $9::jsonb IS NOT NULL
       )
       ${lock ? `SELECT ${spec.lockSession}, t.status, t.run_usage, t.turn_usage, t.error, ${SPENT} FROM s LEFT JOIN t ON true` : `SELECT status, run_usage, turn_usage, error, ${SPENT} FROM t`}`),
      [
        spec.runId,
        spec.lease?.owner ?? null,
        spec.lease?.epoch ?? 0,
        spec.runStatus,
        spec.at,
        spec.error === null ? null : JSON.stringify(spec.error),
        spec.answer?.id ?? newId(),
        spec.turn.sessionId,
        spec.answer ? JSON.stringify(spec.answer.input) : null,
        spec.answer ? JSON.stringify(spec.answer.output) : null,
        spec.usage ? JSON.stringify([spec.usage]) : null,
        spec.context ? JSON.stringify(spec.context) : null,
        spec.error !== null && isTransientFailure(spec.error.code),
        spec.outputShown ?? false,
      ],
    )) as { status: TurnStatus; run_usage: Usage | null; turn_usage: Usage | null; error: PublicError | null; spent: LedgerRow[] | null }[];
    const row = rows[0];
    if (!row?.status) return null;
    const spent = row.spent;
    return {
      ...(lock ? { session: row as unknown as Record<string, unknown> } : {}),
      turn: {
        ...spec.turn,
        status: row.status,
        completedAt: spec.at,
        resultRunId: row.status === 'completed' ? spec.runId : null,
        currentRunId: null,
        error: row.error,
        cancellationPending: false,
        usage: row.turn_usage,
        context: spec.context ?? spec.turn.context,
      },
      runUsage: row.run_usage,
      spent: spent ?? [],
    };
  }

  /**
   * Continues a waiting turn (at a waitpoint: requires_action, or in_progress waiting for members) in a new run (call under the session lock): unleased, resuming from the
   * run that asked, for any worker to take over. The turn is in progress again, its waitpoint gone.
   */
  async resumeTurn(manager: EntityManager, turn: TurnEntity, nextRunId: string, at: Date): Promise<{ turn: TurnEntity; run: RunEntity } | null> {
    const fromRunId = turn.waitpoint?.run_id ?? turn.currentRunId;
    const rows = (await manager.query(
      prepared(`WITH t AS (
         UPDATE turns SET status = '${TURN_TRANSITIONS.resume.to[0]}', waitpoint = NULL, current_run_id = $2
         WHERE id = $1 AND ${statusGuard('status', TURN_TRANSITIONS.resume.from)} AND waitpoint IS NOT NULL RETURNING id
       )
       INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, resume_from_run_id, epoch, created_at)
       SELECT $2, f.turn_id, f.session_id, (SELECT max(seq) + 1 FROM runs WHERE turn_id = $1), '${RUN_TRANSITIONS.resume.to[0]}', '{}', f.model, f.config, f.id,
              (SELECT coalesce(max(epoch), 0) + 1 FROM runs WHERE session_id = f.session_id), $4
       FROM runs f, t WHERE f.id = $3
       RETURNING id`),
      [turn.id, nextRunId, fromRunId, at],
    )) as { id: string }[];
    if (rows.length === 0) return null;
    const run = await manager.getRepository(RunEntity).findOneByOrFail({ id: nextRunId });
    return { turn: { ...turn, status: 'in_progress', waitpoint: null, currentRunId: nextRunId }, run };
  }

  /**
   * Cancels a turn that waits at a waitpoint (no worker holds it; a waitpoint is set only then, a
   * coordinator's cooperation wait included): the turn and its waiting run end cancelled.
   */
  async cancelWaitingTurn(manager: EntityManager, turn: TurnEntity, at: Date): Promise<{ turn: TurnEntity; run: RunEntity | null } | null> {
    const rows = (await manager.query(
      prepared(`WITH t AS (
         UPDATE turns SET status = '${TURN_TRANSITIONS.cancelWaiting.to[0]}', waitpoint = NULL, current_run_id = NULL, cancellation_pending = false, completed_at = $2
         WHERE id = $1 AND ${statusGuard('status', TURN_TRANSITIONS.cancelWaiting.from)} AND waitpoint IS NOT NULL RETURNING id
       ), r AS (
         UPDATE runs SET status = '${RUN_TRANSITIONS.cancelWaiting.to[0]}' WHERE turn_id = $1 AND ${statusGuard('status', RUN_TRANSITIONS.cancelWaiting.from)} AND EXISTS (SELECT 1 FROM t) RETURNING id
       )
       SELECT t.id, (SELECT id FROM r LIMIT 1) AS run_id FROM t`),
      [turn.id, at],
    )) as { id: string; run_id: string | null }[];
    const row = rows[0];
    if (!row) return null;
    const run = row.run_id ? await manager.getRepository(RunEntity).findOneBy({ id: row.run_id }) : null;
    return { turn: { ...turn, status: 'cancelled', waitpoint: null, currentRunId: null, cancellationPending: false, completedAt: at }, run };
  }

  /** Whether the turn was asked to cancel (read under the session lock). */
  async cancellationPending(manager: EntityManager, turnId: string): Promise<boolean> {
    const rows = (await manager.query(prepared(`SELECT cancellation_pending FROM turns WHERE id = $1`), [turnId])) as { cancellation_pending: boolean }[];
    return rows[0]?.cancellation_pending ?? false;
  }

  /** The context of the session's latest turn that called a model (what `/state` shows). */
  async latestContext(session: HistoryScope): Promise<TurnContext | null> {
    if (session.forkItemSeq !== null) return latestContextInLineage(this.turns.manager, session.id);
    const sessionId = session.id;
    const rows = (await this.turns.query(prepared(`SELECT context FROM turns WHERE session_id = $1 AND context IS NOT NULL ORDER BY seq DESC LIMIT 1`), [sessionId])) as {
      context: TurnContext;
    }[];
    return rows[0]?.context ?? null;
  }

  async findTurn(manager: EntityManager, turnId: string): Promise<TurnEntity | null> {
    if (!isUuid(turnId)) return null;
    return manager.getRepository(TurnEntity).findOneBy({ id: turnId });
  }

  /** A turn the session shows (a fork: its own, or one it inherits). */
  async getTurn(session: HistoryScope, turnId: string): Promise<TurnEntity> {
    const sessionId = session.id;
    const turn = session.forkItemSeq !== null ? await turnInLineage(this.turns.manager, sessionId, turnId) : isUuid(turnId) ? await this.turns.findOneBy({ id: turnId, sessionId }) : null;
    if (!turn) throw DomainError.notFound(`Turn ${turnId}`);
    return turn;
  }

  async listTurns(session: HistoryScope, page: PageQuery): Promise<Page<TurnEntity>> {
    if (session.forkItemSeq !== null) return listTurnsInLineage(this.turns.manager, session.id, page);
    const sessionId = session.id;
    const qb = this.turns.createQueryBuilder('t').where('t.session_id = :sessionId', { sessionId });
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? await this.turns.findOneBy({ id: page.after, sessionId }) : null;
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a turn of this session');
      qb.andWhere(`t.seq ${page.order === 'desc' ? '<' : '>'} :seq`, { seq: anchor.seq });
    }
    const rows = await qb
      .orderBy('t.seq', page.order === 'desc' ? 'DESC' : 'ASC')
      .limit(page.limit + 1)
      .getMany();
    return toPage(rows, page.limit);
  }

  /** The session's latest turns as an operator sees them (the ops CLI), newest first. */
  async operatorSummaries(sessionId: string, limit: number): Promise<Record<string, unknown>[]> {
    return (await this.turns.query(
      prepared(`SELECT id, seq, status, cancellation_pending, current_run_id, result_run_id, waitpoint IS NOT NULL AS waiting, error, created_at, started_at, completed_at
       FROM turns WHERE session_id = $1 ORDER BY seq DESC LIMIT $2`),
      [sessionId, limit],
    )) as Record<string, unknown>[];
  }

  /**
   * Open waitpoints across every owner's sessions (the operator inbox), newest first by default:
   * ordered by the waitpoint's id, a UUIDv7 (creation order), so `after` needs no anchor row and
   * stays valid when the waitpoint it names is answered meanwhile. Deleted sessions' turns are
   * left out. One statement over the partial index of waiting turns.
   */
  async openWaitpoints(filter: OpenWaitpointFilter, page: PageQuery): Promise<Page<OpenWaitpointRow>> {
    if (page.after !== undefined && !isUuid(page.after)) throw new DomainError('invalid_cursor', 'The `after` cursor is not a waitpoint id');
    const params: unknown[] = [page.limit + 1];
    // A person or the client is asked only while the turn is requires_action; a coordinator's
    // cooperation wait keeps its turn in_progress and is listed only when asked for by kind.
    let where = filter.kind === 'cooperation' ? `t.status = 'in_progress' AND t.waitpoint->>'kind' = 'cooperation'` : `t.status = 'requires_action'`;
    if (filter.kind !== undefined && filter.kind !== 'cooperation') {
      params.push(filter.kind);
      where += ` AND t.waitpoint->>'kind' = $${params.length}`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    if (page.after !== undefined) {
      params.push(page.after);
      where += ` AND (t.waitpoint->>'id')::uuid ${page.order === 'desc' ? '<' : '>'} $${params.length}::uuid`;
    }
    const rows = (await this.turns.query(
      `SELECT t.id, t.status, t.session_id, s.owner_id, s.agent_id, t.waitpoint,
              u.kind AS owner_kind, u.name AS owner_name, u.subject AS owner_subject, u.external_id AS owner_external_id, u.app_id AS owner_app_id
       FROM turns t JOIN sessions s ON s.id = t.session_id JOIN users u ON u.id = s.owner_id
       WHERE t.waitpoint IS NOT NULL AND s.deleted_at IS NULL AND ${where}
       ORDER BY (t.waitpoint->>'id')::uuid ${direction} LIMIT $1`,
      params,
    )) as {
      id: string;
      status: TurnStatus;
      session_id: string;
      owner_id: string;
      agent_id: string;
      waitpoint: Waitpoint;
      owner_kind: 'user' | 'end_user';
      owner_name: string;
      owner_subject: string | null;
      owner_external_id: string | null;
      owner_app_id: string | null;
    }[];
    return toPage(
      rows.map((row) => ({
        turnId: row.id,
        turnStatus: row.status,
        sessionId: row.session_id,
        ownerId: row.owner_id,
        owner: { kind: row.owner_kind, name: row.owner_name, subject: row.owner_subject, externalId: row.owner_external_id, appId: row.owner_app_id },
        agentId: row.agent_id,
        waitpoint: row.waitpoint,
      })),
      page.limit,
    );
  }

  /** A chunk of the session's own turns with a trace id and maybe spans, in `seq` order, after a cursor or a seq (the traces route's; views/traced-turns.ts). */
  async tracedTurns(sessionId: string, query: TracedTurnsQuery): Promise<Page<TracedTurnRow>> {
    return tracedTurnsPage(this.turns.manager, sessionId, query);
  }
}
