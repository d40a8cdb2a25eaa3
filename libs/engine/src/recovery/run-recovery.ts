import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { DomainError } from '#libs/errors';
import { metrics } from '#libs/metrics';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { ACTIVE_TURN_STATUSES } from '../machines/turn-states.js';
import { type PublicError, type RunEntity, type TurnEntity } from '../tables/turn.entities.js';
import { RunsRepository } from '../tables/runs.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Interrupted, Outcome, Seized, Settled } from '../claims/held-turn.js';
import { RunOutputWriter, turnSeconds } from '../endings/run-output.js';

const TAKEOVER_LIMIT_ERROR: PublicError = {
  code: 'run_takeover_limit',
  message: 'The turn was interrupted too many times (its workers kept stopping); it was not retried again',
};

/**
 * How a run that its worker no longer holds is ended or handed on. The recovery sweep
 * (`LeaseTakeovers`) interrupts a run whose lease expired, holding no lease itself: the run row is
 * locked and its expiry re-checked in the transaction. The operator (`FailTurn`, the ops CLI's
 * `fail-turn`) seizes the lease of a stuck turn's run under a new fencing epoch, then fails the turn
 * under that seized lease. Each is one transaction under the session lock that also writes the
 * events announcing it to the outbox; none touches Redis, so a Redis outage never changes what is
 * committed. The caller publishes the returned batch after commit.
 */
@Injectable()
export class RunRecovery {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly config: AppConfig,
    private readonly writer: RunOutputWriter,
  ) {}

  /**
   * Recovery of a run whose lease expired (its worker died or stalled): the text clients saw is kept
   * as an incomplete item, and the turn continues in a new run for another worker, unless it is
   * being cancelled (it ends cancelled) or was interrupted too often (it fails). `shown` is what
   * the stream shows of the run's items (read from Redis by the caller; null when it could not be
   * read, and clients are told to resync); the run's heartbeat checkpoint stands in where the
   * stream has less.
   */
  async interruptExpired(run: RunEntity, shown: Map<string, { outputIndex: number; text: string }> | null): Promise<Interrupted | null> {
    let ended = null as TurnEntity | null;
    const result = await this.interruptOnce(run, shown, (turn) => (ended = turn));
    if (result && ended) metrics.turnFinished(ended.status as Outcome['status'], turnSeconds(ended));
    return result;
  }

  private async interruptOnce(
    run: RunEntity,
    shown: Map<string, { outputIndex: number; text: string }> | null,
    onEnded: (turn: TurnEntity) => void,
  ): Promise<Interrupted | null> {
    const { sessionId } = run;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      // Re-checked under the locks: a heartbeat that renewed in time keeps its run untouched.
      if (!(await this.runs.lockExpiredRun(manager, run.id))) return null;
      const turn = await this.turns.findTurn(manager, run.turnId);
      if (!turn) return null;
      const now = new Date();
      const { closing, index } = await this.writer.closeShown(manager, run, turn, shown, now);
      const ending = turn.cancellationPending ? ({ status: 'cancelled' } as const) : null;
      const limited = !ending && (await this.runs.interruptionsOf(manager, turn.id)) >= this.config.runMaxTakeovers;
      if (ending || limited) {
        const ended = await this.writer.endRun(manager, run, turn, null, ending ? 'cancelled' : 'failed', limited ? TAKEOVER_LIMIT_ERROR : null, closing, now);
        if (ended) onEnded(ended.turn);
        return ended ? { batch: ended.batch, nudges: [{ kind: 'queue' }, ...ended.nudges], awaiting: null } : null;
      }
      const epoch = await this.runs.nextEpoch(manager, sessionId);
      const result = await this.runs.interruptRun(manager, run.id, null, { nextRunId: newId(), epoch, inputIds: [], at: now });
      if (!result) return null;
      const successor = await this.writer.announceSuccessor(manager, turn, result, closing, epoch, index);
      return { ...successor, awaiting: successor.run.id };
    });
  }

  /**
   * Operator (ops CLI `fail-turn`), first step: takes the lease of the active turn's run from
   * whoever holds it, for `owner`, under a new fencing epoch: the worker that held it can no longer
   * write anything of the run (and stops at its next heartbeat), and the recovery sweep leaves it
   * alone while the operator's lease lasts. A turn waiting at a waitpoint has no run to take: it is
   * cancelled through the API instead.
   */
  async seize(turnId: string, owner: string): Promise<Seized> {
    return this.dataSource.transaction(async (manager) => {
      const found = await this.turns.findTurn(manager, turnId);
      if (!found) throw DomainError.notFound(`Turn ${turnId}`);
      await this.sessions.lock(manager, found.sessionId);
      const turn = await this.turns.findTurn(manager, turnId);
      if (!turn || !(ACTIVE_TURN_STATUSES as readonly string[]).includes(turn.status)) {
        throw new DomainError('state_conflict', `Turn ${turnId} has already ended (${turn?.status ?? 'gone'})`);
      }
      if (turn.status === 'requires_action') {
        throw new DomainError('state_conflict', `Turn ${turnId} waits at a waitpoint and has no run in progress; cancel it instead`);
      }
      const current = turn.currentRunId ? await this.runs.getRunIn(manager, turn.currentRunId) : null;
      if (!current || current.status !== 'in_progress') throw new DomainError('state_conflict', `Turn ${turnId} has no run in progress`);
      const epoch = await this.runs.nextEpoch(manager, turn.sessionId);
      const run = await this.runs.seizeRun(manager, current.id, owner, epoch, this.config.runLeaseMs);
      if (!run) throw new DomainError('state_conflict', `Run ${current.id} ended meanwhile`);
      return { turn, run, lease: { runId: run.id, owner, epoch: run.epoch }, previousOwner: current.leaseOwner };
    });
  }

  /**
   * Operator, second step: ends the seized run and its turn failed with `error`, as recovery ends an
   * interrupted one: the text clients saw (`shown`, read from the stream after the fence was
   * raised; null: unknown, clients are told to resync) is kept as an incomplete item, the session
   * overview moves, the events go to the outbox, and what waits behind the failed turn is paused.
   * Null when the operator's lease is gone (the step came later than RUN_LEASE_MS).
   */
  async failSeized(seized: Seized, shown: Map<string, { outputIndex: number; text: string }> | null, error: PublicError): Promise<Settled | null> {
    const { sessionId } = seized.turn;
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      // Checked before anything is written: a lease lost meanwhile (another operator, or the CLI too
      // slow) must not leave items behind without the events that announce them.
      if (!(await this.runs.lockHeldRun(manager, seized.lease))) return null;
      const turn = await this.turns.findTurn(manager, seized.turn.id);
      const run = await this.runs.getRunIn(manager, seized.run.id);
      if (!turn || !run) return null;
      const now = new Date();
      const { closing } = await this.writer.closeShown(manager, run, turn, shown, now);
      const ended = await this.writer.endRun(manager, run, turn, seized.lease, 'failed', error, closing, now);
      if (!ended) return null;
      if (session && session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, sessionId, true);
      return { turn: ended.turn, status: 'failed', batch: ended.batch, nudges: [{ kind: 'queue' }, ...ended.nudges], pendingInputs: session?.pendingInputCount ?? 0 };
    });
  }
}
