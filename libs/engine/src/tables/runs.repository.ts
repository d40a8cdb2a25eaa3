import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type EntityManager, In, type Repository } from 'typeorm';
import { isUuid, prepared } from '#libs/database';
import { DomainError } from '#libs/errors';
import { budgetedSql } from '#libs/budgets';
import { RunEntity, type RunCheckpoint, type Usage, type Waitpoint } from './turn.entities.js';
import { EXECUTING, HELD, type Lease } from '../claims/lease.js';
import { type HistoryScope, runInLineage } from './lineage-reads.js';
import type { RunFleetCounts, TimelineRunRow } from '../views/operator-reads.js';
import { LEASABLE_RUN_STATUSES, RUN_TRANSITIONS, statusGuard, TURN_TRANSITIONS } from '../machines/turn-states.js';

export interface SuccessorSpec {
  nextRunId: string;
  epoch: number;
  inputIds: string[];
  at: Date;
}

interface SuccessorRow {
  seq: number;
  model: string;
  config: object;
  turn_id: string;
  session_id: string;
}

/**
 * The `runs` table: leases, fencing epochs, successors and the recovery sweep's reads. A run's
 * output and state are written only through its lease (see Lease); recovery acts only on runs
 * whose lease expired or that nobody holds.
 */
@Injectable()
export class RunsRepository {
  constructor(@InjectRepository(RunEntity) private readonly runs: Repository<RunEntity>) {}

  /** The next fencing epoch of the session (call under the session lock): every lease gets a higher one. */
  async nextEpoch(manager: EntityManager, sessionId: string): Promise<number> {
    const rows = (await manager.query(prepared(`SELECT coalesce(max(epoch), 0) + 1 AS epoch FROM runs WHERE session_id = $1`), [sessionId])) as { epoch: string }[];
    return Number(rows[0]?.epoch ?? 1);
  }

  /**
   * Extends the lease on the database clock, saves what the run has shown so far, and reports
   * whether the turn was asked to cancel and whether a budget covers its session now (`budgeted`:
   * a budget created or deleted mid-turn applies from the run's next call). `held: false`: the lease
   * is gone (expired, taken over or settled); an expired lease is never revived.
   */
  async renewLease(lease: Lease, leaseMs: number, checkpoint: RunCheckpoint | null): Promise<{ held: boolean; cancelRequested: boolean; budgeted: boolean }> {
    const rows = (await this.runs.query(
      prepared(`WITH r AS (
         UPDATE runs SET lease_expires_at = now() + make_interval(secs => $4::double precision / 1000),
           -- The same item's checkpoint is merged: reasoning saved meanwhile (saveCheckpoint) survives a heartbeat built before it.
           checkpoint = CASE WHEN $5::jsonb IS NULL THEN checkpoint WHEN checkpoint->>'item_id' = $5::jsonb->>'item_id' THEN checkpoint || $5::jsonb ELSE $5::jsonb END
         WHERE ${HELD('$1', '$2', '$3')} RETURNING turn_id
       )
       SELECT t.cancellation_pending, ${budgetedSql('s')} AS budgeted FROM turns t JOIN r ON t.id = r.turn_id JOIN sessions s ON s.id = t.session_id`),
      [lease.runId, lease.owner, lease.epoch, leaseMs, checkpoint === null ? null : JSON.stringify(checkpoint)],
    )) as { cancellation_pending: boolean; budgeted: boolean }[];
    return { held: rows.length > 0, cancelRequested: rows[0]?.cancellation_pending ?? false, budgeted: rows[0]?.budgeted ?? false };
  }

  /**
   * Saves what the run has shown now, between heartbeats: a block that completed (reasoning) is
   * persisted before its done event is sent. False when the lease is gone.
   */
  async saveCheckpoint(lease: Lease, checkpoint: RunCheckpoint): Promise<boolean> {
    const rows = (await this.runs.query(prepared(`UPDATE runs SET checkpoint = $4::jsonb WHERE ${HELD('$1', '$2', '$3')} RETURNING id`), [
      lease.runId,
      lease.owner,
      lease.epoch,
      JSON.stringify(checkpoint),
    ])) as [{ id: string }[], number];
    return rows[0].length > 0;
  }

  /**
   * Yields the leased run at a safe boundary and starts the next run of the same turn for the given
   * inputs (a steer batch), leased to the same owner under a new epoch. Null when the lease is gone.
   */
  async yieldRun(manager: EntityManager, lease: Lease, next: SuccessorSpec, leaseMs: number): Promise<RunEntity | null> {
    const rows = (await manager.query(
      prepared(`WITH old AS (
         UPDATE runs SET status = '${RUN_TRANSITIONS.yield.to[0]}', completed_at = $4, lease_owner = NULL, lease_expires_at = NULL
         WHERE ${HELD('$1', '$2', '$3')}
         RETURNING turn_id, session_id, seq, model, config
       ), next AS (
         INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, resume_from_run_id, lease_owner, lease_expires_at, epoch, created_at, started_at)
         SELECT $5, turn_id, session_id, seq + 1, '${RUN_TRANSITIONS.start.to[0]}', $6, model, config, $1, $2,
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
   * over. Through `lease` (a graceful release), or with null for a run whose lease expired. What the
   * run's calls reserved against budgets goes with it (a reservation counts only while its run holds
   * a live lease anyway: this deletes the rows the successor would otherwise leave behind).
   */
  async interruptRun(manager: EntityManager, runId: string, lease: Lease | null, next: SuccessorSpec): Promise<{ interrupted: RunEntity; next: RunEntity } | null> {
    const rows = (await manager.query(
      prepared(`WITH old AS (
         UPDATE runs SET status = '${RUN_TRANSITIONS.interrupt.to[0]}', completed_at = $4, lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $1 AND ${statusGuard('status', RUN_TRANSITIONS.interrupt.from)}
           AND (($2::text IS NULL AND lease_expires_at < now()) OR (lease_owner = $2 AND epoch = $3 AND lease_expires_at > now()))
         RETURNING turn_id, session_id, seq, model, config
       ), next AS (
         INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, resume_from_run_id, lease_owner, lease_expires_at, epoch, created_at)
         SELECT $5, turn_id, session_id, seq + 1, '${RUN_TRANSITIONS.start.to[0]}', '{}', model, config, $1, NULL, NULL, $6, $4 FROM old
         RETURNING id, turn_id, seq
       ), t AS (
         UPDATE turns SET current_run_id = $5 WHERE id = (SELECT turn_id FROM next)
       ), rel AS (
         DELETE FROM budget_reservations WHERE run_id = $1 AND EXISTS (SELECT 1 FROM old)
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
    const rows = (await manager.query(prepared(`SELECT 1 FROM runs WHERE id = $1 AND ${EXECUTING} AND lease_expires_at < now() FOR UPDATE`), [
      runId,
    ])) as unknown[];
    return rows.length > 0;
  }

  /** Leases the session's run that waits for a worker (after a crash or release) to the caller. */
  async takeOver(manager: EntityManager, sessionId: string, owner: string, leaseMs: number): Promise<RunEntity | null> {
    const [rows] = (await manager.query(
      prepared(`UPDATE runs SET lease_owner = $2, lease_expires_at = now() + make_interval(secs => $3::double precision / 1000), started_at = coalesce(started_at, now())
       WHERE session_id = $1 AND ${EXECUTING} AND lease_owner IS NULL RETURNING id`),
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
       WHERE id = $1 AND ${EXECUTING} RETURNING id`),
      [runId, owner, epoch, leaseMs],
    )) as [{ id: string }[], number];
    return rows[0] ? manager.getRepository(RunEntity).findOneByOrFail({ id: runId }) : null;
  }

  /** Whether the session has a run waiting for a worker to take it over (no lock: a hint). */
  async hasUnleasedRun(sessionId: string): Promise<boolean> {
    const rows = (await this.runs.query(prepared(`SELECT 1 FROM runs WHERE session_id = $1 AND ${EXECUTING} AND lease_owner IS NULL LIMIT 1`), [
      sessionId,
    ])) as unknown[];
    return rows.length > 0;
  }

  /** How many runs of the turn were interrupted: a turn that keeps killing its workers stops. */
  async interruptionsOf(manager: EntityManager, turnId: string): Promise<number> {
    const rows = (await manager.query(prepared(`SELECT count(*)::int AS n FROM runs WHERE turn_id = $1 AND status = 'interrupted'`), [turnId])) as { n: number }[];
    return rows[0]?.n ?? 0;
  }

  /** The usage totals of a run and its turn, as they stand. */
  async usageOf(manager: EntityManager, runId: string, turnId: string): Promise<{ run: Usage | null; turn: Usage | null }> {
    const rows = (await manager.query(prepared(`SELECT (SELECT usage FROM runs WHERE id = $1) AS run, (SELECT usage FROM turns WHERE id = $2) AS turn`), [runId, turnId])) as {
      run: Usage | null;
      turn: Usage | null;
    }[];
    return { run: rows[0]?.run ?? null, turn: rows[0]?.turn ?? null };
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
   * waitpoint (its current run stays the one that asked): `requires_action`, or still `in_progress`
   * at a cooperation wait (no person is asked; the members' settling wakes it). False when the lease is gone.
   */
  async suspendRun(manager: EntityManager, lease: Lease, turnId: string, waitpoint: Waitpoint, at: Date): Promise<boolean> {
    const [rows] = (await manager.query(
      prepared(`WITH r AS (
         UPDATE runs SET status = '${RUN_TRANSITIONS.suspend.to[0]}', completed_at = $4, lease_owner = NULL, lease_expires_at = NULL
         WHERE ${HELD('$1', '$2', '$3')} AND EXISTS (SELECT 1 FROM turns WHERE turns.id = $6 AND ${statusGuard('turns.status', TURN_TRANSITIONS.suspend.from)})
         RETURNING turn_id
       )
       UPDATE turns SET status = CASE WHEN $5::jsonb->>'kind' = 'cooperation' THEN '${TURN_TRANSITIONS.suspend.to[1]}' ELSE '${TURN_TRANSITIONS.suspend.to[0]}' END, waitpoint = $5::jsonb
       FROM r WHERE turns.id = r.turn_id AND turns.id = $6 RETURNING turns.id`),
      [lease.runId, lease.owner, lease.epoch, at, JSON.stringify(waitpoint), turnId],
    )) as [{ id: string }[], number];
    return rows.length > 0;
  }

  /** Runs whose owner stopped renewing, oldest expiry first. */
  async expiredRuns(limit: number): Promise<RunEntity[]> {
    return this.runs
      .createQueryBuilder('r')
      .where(`r.${EXECUTING} AND r.lease_expires_at < now()`)
      .orderBy('r.lease_expires_at', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** Sessions whose turn has a run waiting for a worker, for the sweep to nudge. */
  async sessionsAwaitingTakeover(limit: number): Promise<{ sessionId: string; runId: string }[]> {
    const rows = (await this.runs.query(
      prepared(`SELECT session_id, id FROM runs WHERE ${EXECUTING} AND lease_owner IS NULL ORDER BY created_at LIMIT $1`),
      [limit],
    )) as { session_id: string; id: string }[];
    return rows.map((row) => ({ sessionId: row.session_id, runId: row.id }));
  }

  /**
   * The assistant message an executing run is streaming, as its last checkpoint has it; null when
   * the run executes no more, has not checkpointed, or its message is written already.
   */
  async streamingMessage(runId: string): Promise<{ run: Pick<RunEntity, 'id' | 'turnId' | 'startedAt' | 'createdAt'>; checkpoint: RunCheckpoint } | null> {
    const rows = (await this.runs.query(
      prepared(`SELECT r.id, r.turn_id, r.started_at, r.created_at, r.checkpoint FROM runs r
       WHERE r.id = $1 AND ${statusGuard('r.status', LEASABLE_RUN_STATUSES)} AND r.checkpoint IS NOT NULL
         AND NOT EXISTS (SELECT 1 FROM items i WHERE i.id = (r.checkpoint->>'item_id')::uuid)`),
      [runId],
    )) as { id: string; turn_id: string; started_at: Date | null; created_at: Date; checkpoint: RunCheckpoint }[];
    const row = rows[0];
    return row ? { run: { id: row.id, turnId: row.turn_id, startedAt: row.started_at, createdAt: row.created_at }, checkpoint: row.checkpoint } : null;
  }

  /** A run the session shows (a fork: its own, or one of a turn it inherits). */
  async getRun(session: HistoryScope, runId: string): Promise<RunEntity> {
    const sessionId = session.id;
    const run = session.forkItemSeq !== null ? await runInLineage(this.runs.manager, sessionId, runId) : isUuid(runId) ? await this.runs.findOneBy({ id: runId, sessionId }) : null;
    if (!run) throw DomainError.notFound(`Run ${runId}`);
    return run;
  }

  async runsOfTurn(turnId: string): Promise<RunEntity[]> {
    return this.runs.find({ where: { turnId }, order: { seq: 'ASC' } });
  }

  async runsByIds(ids: string[]): Promise<RunEntity[]> {
    if (ids.length === 0) return [];
    return this.runs.find({ where: { id: In(ids) }, order: { createdAt: 'ASC' } });
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

  /** The runs of these turns with their leases, as an operator sees them (the ops CLI; remaining time on the database clock). */
  async operatorSummaries(turnIds: string[]): Promise<Record<string, unknown>[]> {
    const rows = (await this.runs.query(
      prepared(`SELECT id, turn_id, seq, status, model, epoch, lease_owner, lease_expires_at,
              CASE WHEN lease_expires_at IS NULL THEN NULL ELSE round(extract(epoch FROM lease_expires_at - now()) * 1000) END AS lease_remaining_ms,
              error, created_at, started_at, completed_at
       FROM runs WHERE turn_id = ANY($1::uuid[]) ORDER BY turn_id, seq`),
      [turnIds],
    )) as Record<string, unknown>[];
    return rows.map((run) => ({ ...run, epoch: Number(run.epoch), lease_remaining_ms: run.lease_remaining_ms === null ? null : Number(run.lease_remaining_ms) }));
  }

  /** The session's runs that wait for a worker to take them over (no lock: what to nudge). */
  async unleasedRunIds(sessionId: string): Promise<string[]> {
    const rows = (await this.runs.query(prepared(`SELECT id FROM runs WHERE session_id = $1 AND ${EXECUTING} AND lease_owner IS NULL`), [sessionId])) as { id: string }[];
    return rows.map((row) => row.id);
  }

  /** The runs of a page of turns, in one statement (the operator timeline): oldest run first within each turn. */
  async timelineRuns(turnIds: string[]): Promise<TimelineRunRow[]> {
    if (turnIds.length === 0) return [];
    const rows = (await this.runs.query(
      prepared(`SELECT id, turn_id, seq, status, model, input_ids, resume_from_run_id, lease_owner, lease_expires_at, epoch, usage, error, created_at, started_at, completed_at
       FROM runs WHERE turn_id = ANY($1::uuid[]) ORDER BY turn_id, seq`),
      [turnIds],
    )) as Record<string, unknown>[];
    return rows.map((row) => ({
      id: row.id as string,
      turnId: row.turn_id as string,
      seq: Number(row.seq),
      status: row.status as TimelineRunRow['status'],
      model: row.model as string,
      inputIds: row.input_ids as string[],
      resumeFromRunId: row.resume_from_run_id as string | null,
      leaseOwner: row.lease_owner as string | null,
      leaseExpiresAt: row.lease_expires_at as Date | null,
      epoch: Number(row.epoch ?? 0),
      usage: row.usage as Usage | null,
      error: row.error as TimelineRunRow['error'],
      createdAt: row.created_at as Date,
      startedAt: row.started_at as Date | null,
      completedAt: row.completed_at as Date | null,
    }));
  }

  /**
   * Fleet-wide run counts for the queues page, each from a partial index (leased runs by expiry,
   * unleased runs, interrupted runs by completion): cheap however long the history.
   */
  async fleetCounts(): Promise<RunFleetCounts> {
    const rows = (await this.runs.query(
      prepared(`SELECT
         (SELECT count(*) FROM runs WHERE ${EXECUTING} AND lease_expires_at > now() AND lease_owner IS NOT NULL)::int AS held,
         (SELECT count(*) FROM runs WHERE ${EXECUTING} AND lease_owner IS NULL)::int AS awaiting,
         (SELECT count(*) FROM runs WHERE status = '${RUN_TRANSITIONS.interrupt.to[0]}' AND completed_at > now() - interval '1 hour')::int AS takeovers`),
    )) as { held: number; awaiting: number; takeovers: number }[];
    const row = rows[0];
    return { held: row?.held ?? 0, awaitingTakeover: row?.awaiting ?? 0, takeoversLastHour: row?.takeovers ?? 0 };
  }
}
