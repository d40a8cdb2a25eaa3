import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, In, type Repository } from 'typeorm';
import { isUuid, newId, type Page, type PageQuery, prepared, preparedUpTo, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import {
  ACTIVE_TURN_STATUSES,
  type CommittedStep,
  ItemEntity,
  type PublicError,
  type RunCheckpoint,
  RunEntity,
  type RunStatus,
  type StepKind,
  type StepOutput,
  TurnEntity,
  type TurnStatus,
  type Usage,
  type Waitpoint,
} from './entities.js';

/**
 * The right to write one run: its id, the worker holding it, and the fencing epoch it was leased
 * under. Every write through a lease is one statement that also checks, on the database clock,
 * that the lease is still this one and unexpired: a worker that lost it can no longer write.
 */
export interface Lease {
  runId: string;
  owner: string;
  epoch: number;
}

/** The predicate every fenced write puts on `runs` (parameters: run id, owner, epoch). */
const HELD = (run: string, owner: string, epoch: string): string =>
  `id = ${run} AND status = 'in_progress' AND lease_owner = ${owner} AND epoch = ${epoch} AND lease_expires_at > now()`;

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
  /** The lease to settle through; null settles a run nobody holds any more (expired or awaiting takeover). */
  lease: Lease | null;
  runId: string;
  runStatus: Extract<RunStatus, 'completed' | 'failed' | 'cancelled'>;
  turn: TurnEntity;
  error: PublicError | null;
  /** A completion's model call, recorded as a committed step of the turn. */
  answer?: { input: object; output: object };
  /** Tokens of the run's last model call, added to the run's and the turn's usage. */
  usage?: Usage | null;
  at: Date;
}

export interface SuccessorSpec {
  nextRunId: string;
  epoch: number;
  inputIds: string[];
  at: Date;
}

export type NewItem = Omit<ItemEntity, 'id' | 'seq'> & { id?: string };

export interface NewStep {
  runId: string;
  turnId: string;
  sessionId: string;
  kind: StepKind;
  status: CommittedStep['status'];
  ref: string | null;
  input: object;
  output: StepOutput;
  at: Date;
}

/** Adds a usage object (jsonb) to a column, field by field. */
const ADD_USAGE = (column: string, param: string): string =>
  `jsonb_build_object(${['input_tokens', 'output_tokens', 'cached_tokens', 'total_tokens']
    .map((key) => `'${key}', coalesce((${column}->>'${key}')::bigint, 0) + coalesce((${param}::jsonb->>'${key}')::bigint, 0)`)
    .join(', ')})`;

interface SuccessorRow {
  seq: number;
  model: string;
  config: object;
  turn_id: string;
  session_id: string;
}

/**
 * Turns, runs, items and steps. A run's output and state are written only through its lease
 * (see Lease); recovery acts only on runs whose lease expired or that nobody holds.
 */
@Injectable()
export class TurnsService {
  constructor(
    @InjectRepository(TurnEntity) private readonly turns: Repository<TurnEntity>,
    @InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>,
    @InjectRepository(ItemEntity) private readonly items: Repository<ItemEntity>,
  ) {}

  /** The session's turn that still holds it (queued, in progress or waiting), if any: the claim gate. */
  async activeTurn(manager: EntityManager, sessionId: string): Promise<TurnEntity | null> {
    if (!isUuid(sessionId)) return null;
    return manager
      .getRepository(TurnEntity)
      .createQueryBuilder('t')
      .where('t.session_id = :sessionId AND t.status IN (:...active)', { sessionId, active: ACTIVE_TURN_STATUSES })
      .getOne();
  }

  /** The next fencing epoch of the session (call under the session lock): every lease gets a higher one. */
  async nextEpoch(manager: EntityManager, sessionId: string): Promise<number> {
    const rows = (await manager.query(prepared(`SELECT coalesce(max(epoch), 0) + 1 AS epoch FROM runs WHERE session_id = $1`), [sessionId])) as { epoch: string }[];
    return Number(rows[0]?.epoch ?? 1);
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
    const rows = (await manager.query(
      prepared(`WITH t AS (
         INSERT INTO turns (id, session_id, seq, status, agent_id, model, current_run_id, created_at, started_at)
         VALUES ($1, $2, $3, 'in_progress', $4, $5, $6, $7, $7)
       )
       INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, lease_owner, lease_expires_at, epoch, created_at, started_at)
       VALUES ($6, $1, $2, 1, 'in_progress', $8, $5, $9, $10, now() + make_interval(secs => $11::double precision / 1000),
               (SELECT coalesce(max(epoch), 0) + 1 FROM runs WHERE session_id = $2), $7, $7)
       RETURNING epoch`),
      [turnId, spec.sessionId, spec.seq, spec.agentId, spec.model, runId, spec.at, spec.inputIds, JSON.stringify(spec.config), spec.leaseOwner, spec.leaseMs],
    )) as { epoch: string }[];
    run.epoch = Number(rows[0]?.epoch);
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
      preparedUpTo(rows.length, `INSERT INTO items (id, session_id, turn_id, run_id, input_id, seq, type, role, status, content, phase, created_at) VALUES ${tuples.join(', ')}`),
      values,
    );
    return rows;
  }

  /**
   * Extends the lease on the database clock, saves what the run has shown so far, and reports
   * whether the turn was asked to cancel. `held: false`: the lease is gone (expired, taken over or
   * settled); an expired lease is never revived.
   */
  async renewLease(lease: Lease, leaseMs: number, checkpoint: RunCheckpoint | null): Promise<{ held: boolean; cancelRequested: boolean }> {
    const rows = (await this.runs.query(
      prepared(`WITH r AS (
         UPDATE runs SET lease_expires_at = now() + make_interval(secs => $4::double precision / 1000), checkpoint = coalesce($5::jsonb, checkpoint)
         WHERE ${HELD('$1', '$2', '$3')} RETURNING turn_id
       )
       SELECT t.cancellation_pending FROM turns t JOIN r ON t.id = r.turn_id`),
      [lease.runId, lease.owner, lease.epoch, leaseMs, checkpoint === null ? null : JSON.stringify(checkpoint)],
    )) as { cancellation_pending: boolean }[];
    return { held: rows.length > 0, cancelRequested: rows[0]?.cancellation_pending ?? false };
  }

  /**
   * Yields the leased run at a safe boundary and starts the next run of the same turn for the given
   * inputs (a steer batch), leased to the same owner under a new epoch. Null when the lease is gone.
   */
  async yieldRun(manager: EntityManager, lease: Lease, next: SuccessorSpec, leaseMs: number): Promise<RunEntity | null> {
    const rows = (await manager.query(
      prepared(`WITH old AS (
         UPDATE runs SET status = 'yielded', completed_at = $4, lease_owner = NULL, lease_expires_at = NULL
         WHERE ${HELD('$1', '$2', '$3')}
         RETURNING turn_id, session_id, seq, model, config
       ), next AS (
         INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, resume_from_run_id, lease_owner, lease_expires_at, epoch, created_at, started_at)
         SELECT $5, turn_id, session_id, seq + 1, 'in_progress', $6, model, config, $1, $2,
                now() + make_interval(secs => $8::double precision / 1000), $7, $4, $4 FROM old
         RETURNING id, turn_id, seq
       ), t AS (
         UPDATE turns SET current_run_id = $5 WHERE id = (SELECT turn_id FROM next)
       )
       SELECT next.seq, old.model, old.config, old.turn_id, old.session_id FROM next, old`),
      [lease.runId, lease.owner, lease.epoch, next.at, next.nextRunId, next.inputIds, next.epoch, leaseMs],
    )) as SuccessorRow[];
    return rows[0] ? this.successor(manager, rows[0], lease.runId, next, lease.owner) : null;
  }

  /**
   * Interrupts a run and starts its successor in the same turn, unleased, for any worker to take
   * over. Through `lease` (a graceful release), or with null for a run whose lease expired.
   */
  async interruptRun(manager: EntityManager, runId: string, lease: Lease | null, next: SuccessorSpec): Promise<{ interrupted: RunEntity; next: RunEntity } | null> {
    const rows = (await manager.query(
      prepared(`WITH old AS (
         UPDATE runs SET status = 'interrupted', completed_at = $4, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $1 AND status = 'in_progress'
           AND (($2::text IS NULL AND lease_expires_at < now()) OR (lease_owner = $2 AND epoch = $3 AND lease_expires_at > now()))
         RETURNING turn_id, session_id, seq, model, config
       ), next AS (
         INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, resume_from_run_id, lease_owner, lease_expires_at, epoch, created_at)
         SELECT $5, turn_id, session_id, seq + 1, 'in_progress', '{}', model, config, $1, NULL, NULL, $6, $4 FROM old
         RETURNING id, turn_id, seq
       ), t AS (
         UPDATE turns SET current_run_id = $5 WHERE id = (SELECT turn_id FROM next)
       )
       SELECT next.seq, old.model, old.config, old.turn_id, old.session_id FROM next, old`),
      [runId, lease?.owner ?? null, lease?.epoch ?? 0, next.at, next.nextRunId, next.epoch],
    )) as SuccessorRow[];
    const row = rows[0];
    if (!row) return null;
    const interrupted = await manager.getRepository(RunEntity).findOneByOrFail({ id: runId });
    const successor = this.successor(manager, row, runId, next, null);
    return { interrupted, next: { ...successor, startedAt: null } };
  }

  async getRunIn(manager: EntityManager, runId: string): Promise<RunEntity | null> {
    return manager.getRepository(RunEntity).findOneBy({ id: runId });
  }

  /** Locks a run still held through `lease` (runs before items, as renewals lock them); false when the lease is gone. */
  async lockHeldRun(manager: EntityManager, lease: Lease): Promise<boolean> {
    const rows = (await manager.query(prepared(`SELECT 1 FROM runs WHERE ${HELD('$1', '$2', '$3')} FOR UPDATE`), [lease.runId, lease.owner, lease.epoch])) as unknown[];
    return rows.length > 0;
  }

  /** Locks a run whose lease expired (runs before items, as renewals lock them); false when it is not expired (any more). */
  async lockExpiredRun(manager: EntityManager, runId: string): Promise<boolean> {
    const rows = (await manager.query(prepared(`SELECT 1 FROM runs WHERE id = $1 AND status = 'in_progress' AND lease_expires_at < now() FOR UPDATE`), [
      runId,
    ])) as unknown[];
    return rows.length > 0;
  }

  /** Leases the session's run that waits for a worker (after a crash or release) to the caller. */
  async takeOver(manager: EntityManager, sessionId: string, owner: string, leaseMs: number): Promise<RunEntity | null> {
    const [rows] = (await manager.query(
      prepared(`UPDATE runs SET lease_owner = $2, lease_expires_at = now() + make_interval(secs => $3::double precision / 1000), started_at = coalesce(started_at, now())
       WHERE session_id = $1 AND status = 'in_progress' AND lease_owner IS NULL RETURNING id`),
      [sessionId, owner, leaseMs],
    )) as [{ id: string }[], number];
    const id = rows[0]?.id;
    return id ? manager.getRepository(RunEntity).findOneByOrFail({ id }) : null;
  }

  /**
   * Gives the run's lease to `owner` under `epoch` (a new fencing epoch; call under the session
   * lock), whoever held it: the operator's way to stop a run its worker still holds. Every write
   * through the old lease is refused from then on. Null when the run is not in progress.
   */
  async seizeRun(manager: EntityManager, runId: string, owner: string, epoch: number, leaseMs: number): Promise<RunEntity | null> {
    const [rows] = (await manager.query(
      prepared(`UPDATE runs SET lease_owner = $2, epoch = $3, lease_expires_at = now() + make_interval(secs => $4::double precision / 1000), started_at = coalesce(started_at, now())
       WHERE id = $1 AND status = 'in_progress' RETURNING id`),
      [runId, owner, epoch, leaseMs],
    )) as [{ id: string }[], number];
    return rows[0] ? manager.getRepository(RunEntity).findOneByOrFail({ id: runId }) : null;
  }

  /** Whether the session has a run waiting for a worker to take it over (no lock: a hint). */
  async hasUnleasedRun(sessionId: string): Promise<boolean> {
    const rows = (await this.runs.query(prepared(`SELECT 1 FROM runs WHERE session_id = $1 AND status = 'in_progress' AND lease_owner IS NULL LIMIT 1`), [
      sessionId,
    ])) as unknown[];
    return rows.length > 0;
  }

  /** How many runs of the turn were interrupted: a turn that keeps killing its workers stops. */
  async interruptionsOf(manager: EntityManager, turnId: string): Promise<number> {
    const rows = (await manager.query(prepared(`SELECT count(*)::int AS n FROM runs WHERE turn_id = $1 AND status = 'interrupted'`), [turnId])) as { n: number }[];
    return rows[0]?.n ?? 0;
  }

  /** Marks an active turn as being cancelled; returns it, or null when it is not active any more. */
  async requestCancel(manager: EntityManager, sessionId: string, turnId: string): Promise<TurnEntity | null> {
    if (!isUuid(turnId)) return null;
    const [rows] = (await manager.query(
      prepared(`UPDATE turns SET cancellation_pending = true
       WHERE id = $1 AND session_id = $2 AND status IN ('queued', 'in_progress', 'requires_action') RETURNING id`),
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
  async settle(manager: EntityManager, spec: SettleSpec): Promise<{ turn: TurnEntity; runUsage: Usage | null } | null> {
    const rows = (await manager.query(
      prepared(`WITH cur AS (
         SELECT r.id, r.turn_id, t.cancellation_pending FROM runs r JOIN turns t ON t.id = r.turn_id
         WHERE r.id = $1 AND r.status = 'in_progress'
           AND (($2::text IS NULL AND (r.lease_owner IS NULL OR r.lease_expires_at < now())) OR (r.lease_owner = $2 AND r.epoch = $3 AND r.lease_expires_at > now()))
         FOR UPDATE OF r
       ), fin AS (
         SELECT id, turn_id, CASE WHEN cancellation_pending AND $4::text = 'completed' THEN 'cancelled' ELSE $4::text END AS status FROM cur
       ), r AS (
         UPDATE runs SET status = fin.status, completed_at = $5, error = $6::jsonb, lease_owner = NULL, lease_expires_at = NULL,
                usage = CASE WHEN $11::jsonb IS NULL THEN runs.usage ELSE ${ADD_USAGE('runs.usage', '$11')} END
         FROM fin WHERE runs.id = fin.id RETURNING runs.turn_id, fin.status, runs.usage
       ), t AS (
         UPDATE turns SET status = r.status, completed_at = $5, result_run_id = CASE WHEN r.status = 'completed' THEN $1::uuid END,
                current_run_id = NULL, error = $6::jsonb, cancellation_pending = false,
                usage = CASE WHEN $11::jsonb IS NULL THEN turns.usage ELSE ${ADD_USAGE('turns.usage', '$11')} END
         FROM r WHERE turns.id = r.turn_id RETURNING r.status, r.usage AS run_usage, turns.usage AS turn_usage
       ), st AS (
         INSERT INTO run_steps (id, run_id, turn_id, session_id, seq, kind, status, input, output, created_at)
         SELECT $7, $1, r.turn_id, $8, (SELECT coalesce(max(seq), 0) + 1 FROM run_steps WHERE turn_id = r.turn_id), 'model_call', 'completed', $9::jsonb, $10::jsonb, $5
         FROM r WHERE r.status = 'completed' AND $9::jsonb IS NOT NULL
       )
       SELECT status, run_usage, turn_usage FROM t`),
      [
        spec.runId,
        spec.lease?.owner ?? null,
        spec.lease?.epoch ?? 0,
        spec.runStatus,
        spec.at,
        spec.error === null ? null : JSON.stringify(spec.error),
        newId(),
        spec.turn.sessionId,
        spec.answer ? JSON.stringify(spec.answer.input) : null,
        spec.answer ? JSON.stringify(spec.answer.output) : null,
        spec.usage ? JSON.stringify(spec.usage) : null,
      ],
    )) as { status: TurnStatus; run_usage: Usage | null; turn_usage: Usage | null }[];
    const row = rows[0];
    if (!row) return null;
    return {
      turn: {
        ...spec.turn,
        status: row.status,
        completedAt: spec.at,
        resultRunId: row.status === 'completed' ? spec.runId : null,
        currentRunId: null,
        error: spec.error,
        cancellationPending: false,
        usage: row.turn_usage,
      },
      runUsage: row.run_usage,
    };
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

  /** The committed steps of the turn since its latest run that took new input (what a takeover plans from). */
  async stepsSinceLastInput(manager: EntityManager, turnId: string): Promise<CommittedStep[]> {
    const rows = (await manager.query(
      prepared(`SELECT s.run_id, s.kind, s.status, s.ref, s.output FROM run_steps s JOIN runs r ON r.id = s.run_id
       WHERE s.turn_id = $1 AND r.seq >= (SELECT coalesce(max(seq), 1) FROM runs WHERE turn_id = $1 AND cardinality(input_ids) > 0)
       ORDER BY s.seq`),
      [turnId],
    )) as { run_id: string; kind: CommittedStep['kind']; status: CommittedStep['status']; ref: string | null; output: CommittedStep['output'] }[];
    return rows.map((row) => ({ runId: row.run_id, kind: row.kind, status: row.status, ref: row.ref, output: row.output }));
  }

  /**
   * Records a step of the turn (call under the session lock). Through `lease` it is written only
   * while the lease holds; without one (the api resolving a waitpoint) it is written as is. A tool
   * call's result completes its `started` row; a second result for a completed call, or a second
   * response to a waitpoint, writes nothing (false).
   */
  async recordStep(manager: EntityManager, lease: Lease | null, step: NewStep): Promise<boolean> {
    // An INSERT answers its rows (TypeORM pairs rows with a count only for UPDATE and DELETE).
    const rows = (await manager.query(
      prepared(`INSERT INTO run_steps (id, run_id, turn_id, session_id, seq, kind, status, ref, input, output, created_at)
       SELECT $1, $2, $3, $4, (SELECT coalesce(max(seq), 0) + 1 FROM run_steps WHERE turn_id = $3), $5, $6, $7, $8::jsonb, $9::jsonb, $10
       WHERE $11::text IS NULL OR EXISTS (SELECT 1 FROM runs WHERE ${HELD('$2', '$11', '$12')})
       ON CONFLICT (turn_id, kind, ref) WHERE ref IS NOT NULL
       DO UPDATE SET status = excluded.status, output = excluded.output, run_id = excluded.run_id
       WHERE run_steps.status = 'started' AND excluded.status <> 'started'
       RETURNING id`),
      [
        newId(),
        step.runId,
        step.turnId,
        step.sessionId,
        step.kind,
        step.status,
        step.ref,
        JSON.stringify(step.input),
        JSON.stringify(step.output),
        step.at,
        lease?.owner ?? null,
        lease?.epoch ?? 0,
      ],
    )) as { id: string }[];
    return rows.length > 0;
  }

  /** Adds a model call's usage (if any) to its run and turn; returns both totals. */
  async addUsage(manager: EntityManager, runId: string, turnId: string, usage: Usage | null): Promise<{ run: Usage | null; turn: Usage | null }> {
    if (usage !== null) {
      const json = JSON.stringify(usage);
      await manager.query(prepared(`UPDATE runs SET usage = ${ADD_USAGE('usage', '$2')} WHERE id = $1`), [runId, json]);
      await manager.query(prepared(`UPDATE turns SET usage = ${ADD_USAGE('usage', '$2')} WHERE id = $1`), [turnId, json]);
    }
    const rows = (await manager.query(prepared(`SELECT (SELECT usage FROM runs WHERE id = $1) AS run, (SELECT usage FROM turns WHERE id = $2) AS turn`), [runId, turnId])) as {
      run: Usage | null;
      turn: Usage | null;
    }[];
    return { run: rows[0]?.run ?? null, turn: rows[0]?.turn ?? null };
  }

  /** Model and tool calls the turn has made so far (all its runs): what the per-turn limits count. */
  async callCounts(manager: EntityManager, turnId: string): Promise<{ modelCalls: number; toolCalls: number }> {
    const rows = (await manager.query(
      prepared(`SELECT count(*) FILTER (WHERE kind = 'model_call')::int AS model_calls, count(*) FILTER (WHERE kind = 'tool_call')::int AS tool_calls
       FROM run_steps WHERE turn_id = $1`),
      [turnId],
    )) as { model_calls: number; tool_calls: number }[];
    return { modelCalls: rows[0]?.model_calls ?? 0, toolCalls: rows[0]?.tool_calls ?? 0 };
  }

  /** How long the turn's finished runs executed (waits between runs excluded), in ms. */
  async executedMs(manager: EntityManager, turnId: string): Promise<number> {
    const rows = (await manager.query(
      prepared(`SELECT coalesce(sum(extract(epoch FROM completed_at - started_at)), 0)::float8 * 1000 AS ms FROM runs
       WHERE turn_id = $1 AND completed_at IS NOT NULL AND started_at IS NOT NULL`),
      [turnId],
    )) as { ms: number }[];
    return Number(rows[0]?.ms ?? 0);
  }

  /**
   * Stops the leased run at a waitpoint: the run ends `requires_action`, the turn waits with the
   * waitpoint (its current run stays the one that asked). False when the lease is gone.
   */
  async suspendRun(manager: EntityManager, lease: Lease, turnId: string, waitpoint: Waitpoint, at: Date): Promise<boolean> {
    const [rows] = (await manager.query(
      prepared(`WITH r AS (
         UPDATE runs SET status = 'requires_action', completed_at = $4, lease_owner = NULL, lease_expires_at = NULL
         WHERE ${HELD('$1', '$2', '$3')} RETURNING turn_id
       )
       UPDATE turns SET status = 'requires_action', waitpoint = $5::jsonb FROM r WHERE turns.id = r.turn_id AND turns.id = $6 RETURNING turns.id`),
      [lease.runId, lease.owner, lease.epoch, at, JSON.stringify(waitpoint), turnId],
    )) as [{ id: string }[], number];
    return rows.length > 0;
  }

  /**
   * Continues a waiting turn in a new run (call under the session lock): unleased, resuming from the
   * run that asked, for any worker to take over. The turn is in progress again, its waitpoint gone.
   */
  async resumeTurn(manager: EntityManager, turn: TurnEntity, nextRunId: string, at: Date): Promise<{ turn: TurnEntity; run: RunEntity } | null> {
    const fromRunId = turn.waitpoint?.run_id ?? turn.currentRunId;
    const rows = (await manager.query(
      prepared(`WITH t AS (
         UPDATE turns SET status = 'in_progress', waitpoint = NULL, current_run_id = $2
         WHERE id = $1 AND status = 'requires_action' RETURNING id
       )
       INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, resume_from_run_id, epoch, created_at)
       SELECT $2, f.turn_id, f.session_id, (SELECT max(seq) + 1 FROM runs WHERE turn_id = $1), 'in_progress', '{}', f.model, f.config, f.id,
              (SELECT coalesce(max(epoch), 0) + 1 FROM runs WHERE session_id = f.session_id), $4
       FROM runs f, t WHERE f.id = $3
       RETURNING id`),
      [turn.id, nextRunId, fromRunId, at],
    )) as { id: string }[];
    if (rows.length === 0) return null;
    const run = await manager.getRepository(RunEntity).findOneByOrFail({ id: nextRunId });
    return { turn: { ...turn, status: 'in_progress', waitpoint: null, currentRunId: nextRunId }, run };
  }

  /** Cancels a turn that waits at a waitpoint (no worker holds it): the turn and its waiting run end cancelled. */
  async cancelWaitingTurn(manager: EntityManager, turn: TurnEntity, at: Date): Promise<{ turn: TurnEntity; run: RunEntity | null } | null> {
    const rows = (await manager.query(
      prepared(`WITH t AS (
         UPDATE turns SET status = 'cancelled', waitpoint = NULL, current_run_id = NULL, cancellation_pending = false, completed_at = $2
         WHERE id = $1 AND status = 'requires_action' RETURNING id
       ), r AS (
         UPDATE runs SET status = 'cancelled' WHERE turn_id = $1 AND status = 'requires_action' AND EXISTS (SELECT 1 FROM t) RETURNING id
       )
       SELECT t.id, (SELECT id FROM r LIMIT 1) AS run_id FROM t`),
      [turn.id, at],
    )) as { id: string; run_id: string | null }[];
    const row = rows[0];
    if (!row) return null;
    const run = row.run_id ? await manager.getRepository(RunEntity).findOneBy({ id: row.run_id }) : null;
    return { turn: { ...turn, status: 'cancelled', waitpoint: null, currentRunId: null, cancellationPending: false, completedAt: at }, run };
  }

  /** Every call id the turn's model calls have used. */
  async usedCallIds(manager: EntityManager, turnId: string): Promise<Set<string>> {
    const rows = (await manager.query(
      prepared(`SELECT tc->>'call_id' AS id FROM run_steps s, jsonb_array_elements(coalesce(s.output->'tool_calls', '[]'::jsonb)) tc
       WHERE s.turn_id = $1 AND s.kind = 'model_call'`),
      [turnId],
    )) as { id: string }[];
    return new Set(rows.map((row) => row.id));
  }

  /** Whether the turn was asked to cancel (read under the session lock). */
  async cancellationPending(manager: EntityManager, turnId: string): Promise<boolean> {
    const rows = (await manager.query(prepared(`SELECT cancellation_pending FROM turns WHERE id = $1`), [turnId])) as { cancellation_pending: boolean }[];
    return rows[0]?.cancellation_pending ?? false;
  }

  /** The stored results among the given tool calls of a turn. */
  async toolResults(manager: EntityManager, turnId: string, callIds: string[]): Promise<Set<string>> {
    const rows = (await manager.query(
      prepared(`SELECT ref FROM run_steps WHERE turn_id = $1 AND kind = 'tool_call' AND status = 'completed' AND ref = ANY($2::varchar[])`),
      [turnId, callIds],
    )) as { ref: string }[];
    return new Set(rows.map((row) => row.ref));
  }



  private successor(manager: EntityManager, row: SuccessorRow, fromRunId: string, next: SuccessorSpec, owner: string | null): RunEntity {
    return manager.create(RunEntity, {
      id: next.nextRunId,
      turnId: row.turn_id,
      sessionId: row.session_id,
      seq: Number(row.seq),
      status: 'in_progress',
      inputIds: next.inputIds,
      model: row.model,
      config: row.config,
      resumeFromRunId: fromRunId,
      leaseOwner: owner,
      leaseExpiresAt: null,
      epoch: next.epoch,
      checkpoint: null,
      createdAt: next.at,
      startedAt: next.at,
      completedAt: null,
      error: null,
      usage: null,
    });
  }

  async findTurn(manager: EntityManager, turnId: string): Promise<TurnEntity | null> {
    if (!isUuid(turnId)) return null;
    return manager.getRepository(TurnEntity).findOneBy({ id: turnId });
  }

  /** Runs whose owner stopped renewing, oldest expiry first. */
  async expiredRuns(limit: number): Promise<RunEntity[]> {
    return this.runs
      .createQueryBuilder('r')
      .where(`r.status = 'in_progress' AND r.lease_expires_at < now()`)
      .orderBy('r.lease_expires_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** Sessions whose turn has a run waiting for a worker, for the sweep to nudge. */
  async sessionsAwaitingTakeover(limit: number): Promise<{ sessionId: string; runId: string }[]> {
    const rows = (await this.runs.query(
      prepared(`SELECT session_id, id FROM runs WHERE status = 'in_progress' AND lease_owner IS NULL ORDER BY created_at LIMIT $1`),
      [limit],
    )) as { session_id: string; id: string }[];
    return rows.map((row) => ({ sessionId: row.session_id, runId: row.id }));
  }

  async getRun(sessionId: string, runId: string): Promise<RunEntity> {
    const run = isUuid(runId) ? await this.runs.findOneBy({ id: runId, sessionId }) : null;
    if (!run) throw DomainError.notFound(`Run ${runId}`);
    return run;
  }

  async getTurn(sessionId: string, turnId: string): Promise<TurnEntity> {
    const turn = isUuid(turnId) ? await this.turns.findOneBy({ id: turnId, sessionId }) : null;
    if (!turn) throw DomainError.notFound(`Turn ${turnId}`);
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

  async listTurns(sessionId: string, page: PageQuery): Promise<Page<TurnEntity>> {
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
