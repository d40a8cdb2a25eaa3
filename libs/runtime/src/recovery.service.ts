import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { EventPublisher } from '#libs/events';
import { IdempotencyService, InputsService } from '#libs/inputs';
import { SessionDispatcher } from '#libs/queue';
import { SessionsService } from '#libs/sessions';
import { type RunEntity, toCurrentTurn, TurnsService } from '#libs/turns';
import { turnEvents } from './turn-events.js';

const SWEEP_BATCH = 500;

export interface SweepReport {
  expiredRuns: number;
  redispatched: number;
  receiptsDeleted: number;
}

/**
 * Repairs what lost messages and dead workers leave behind: runs whose lease expired are failed
 * (their owner is gone, so no one will settle them), and sessions whose pending inputs waited past
 * the grace period are nudged again. Both are idempotent, so several workers may sweep at once.
 */
@Injectable()
export class RecoveryService {
  private readonly logger = new Logger(RecoveryService.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsService,
    private readonly inputs: InputsService,
    private readonly turns: TurnsService,
    private readonly idempotency: IdempotencyService,
    private readonly dispatcher: SessionDispatcher,
    private readonly publisher: EventPublisher,
    private readonly config: AppConfig,
  ) {}

  async sweep(): Promise<SweepReport> {
    let expiredRuns = 0;
    for (const run of await this.turns.expiredRuns(SWEEP_BATCH)) {
      if (await this.failExpiredRun(run)) expiredRuns += 1;
    }
    const waiting = await this.inputs.sessionsWithWaitingInputs(new Date(Date.now() - this.config.recoveryGraceMs), SWEEP_BATCH);
    for (const sessionId of waiting) await this.dispatcher.nudge(sessionId);
    const receiptsDeleted = await this.idempotency.deleteExpired(SWEEP_BATCH);
    if (expiredRuns > 0 || waiting.length > 0) {
      this.logger.log(`sweep: ${expiredRuns} expired runs failed, ${waiting.length} sessions re-dispatched`);
    }
    return { expiredRuns, redispatched: waiting.length, receiptsDeleted };
  }

  private async failExpiredRun(run: RunEntity): Promise<boolean> {
    const error = { code: 'run_lease_expired', message: 'The worker running this turn stopped responding' };
    const settled = await this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, run.sessionId);
      const now = new Date();
      const current = await this.turns.findTurn(manager, run.turnId);
      if (!current) return null;
      // A turn that was being cancelled when its worker died ends as cancelled, not failed.
      const status: 'cancelled' | 'failed' = current.cancellationPending ? 'cancelled' : 'failed';
      const turn = await this.turns.settle(manager, {
        runId: run.id,
        owner: null,
        runStatus: status,
        turn: current,
        turnStatus: status,
        resultRunId: null,
        error: status === 'failed' ? error : null,
        at: now,
      });
      if (!turn) return null;
      await this.sessions.recordTurnUpdated(manager, run.sessionId, toCurrentTurn(turn), 0, now);
      return { status, turn, run: { ...run, status, completedAt: now, error: turn.error, leaseOwner: null, leaseExpiresAt: null } };
    });
    if (!settled) return false;
    await this.publisher.publish(run.sessionId, [turnEvents.run(settled.status, settled.run), turnEvents.turn(settled.status, settled.turn)]);
    await this.dispatcher.nudge(run.sessionId);
    return true;
  }
}
