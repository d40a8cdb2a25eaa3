import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, REPEATED_CONDITION_LOG_MS, withLogContext } from '#libs/config';
import { EventOutbox, EventPublisher } from '#libs/events';
import { ACTIVE_TURN_STATUSES, AfterCommit, CooperationWaits, IdempotencyService, InputsRepository, type RunEntity, RunRecovery, RunsRepository } from '#libs/engine';
import { SessionDispatcher } from '#libs/queue';
import { metrics } from '#libs/metrics';
import { AttachmentPreparer } from './attachment-preparer.js';

const SWEEP_BATCH = 500;
/** Background preparations the sweep keeps running in one worker process at most. */
const PREPARATIONS_PER_PROCESS = 16;
/** Expired rows are deleted in batches until none is left or this many batches ran (a sweep stays short). */
const DELETE_BATCHES = 20;
const DELETE_BATCH = 5_000;

async function inBatches(deleteSome: (limit: number) => Promise<number>): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < DELETE_BATCHES; batch += 1) {
    const deleted = await deleteSome(DELETE_BATCH);
    total += deleted;
    if (deleted < DELETE_BATCH) break;
  }
  return total;
}

export interface SweepReport {
  interruptedRuns: number;
  takeoversNudged: number;
  redispatched: number;
  receiptsDeleted: number;
  eventsPruned: number;
  preparationsResumed: number;
}

/**
 * Repairs what lost messages and dead workers leave behind. A run whose lease expired is
 * interrupted and its turn continues in a new run on another worker (takeover, not failure); a run
 * waiting for a worker whose nudge was lost is nudged again; a session whose inputs wait with
 * nothing running is nudged again; attachments whose preparation was interrupted are prepared again;
 * expired idempotency receipts and outbox rows past the replay window are deleted. Each step is
 * idempotent and decided in Postgres, so several workers may sweep at once.
 */
@Injectable()
export class RecoveryService {
  private readonly logger = new Logger(RecoveryService.name);
  /** The sessions the last sweep re-dispatched, and when a sweep last said so. */
  private lastRedispatched = '';
  private lastReportAt = 0;

  constructor(
    private readonly recovery: RunRecovery,
    private readonly inputs: InputsRepository,
    private readonly runs: RunsRepository,
    private readonly idempotency: IdempotencyService,
    private readonly dispatcher: SessionDispatcher,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
    private readonly cooperation: CooperationWaits,
    private readonly publisher: EventPublisher,
    private readonly preparer: AttachmentPreparer,
    private readonly config: AppConfig,
  ) {}

  async sweep(): Promise<SweepReport> {
    let interruptedRuns = 0;
    for (const run of await this.runs.expiredRuns(SWEEP_BATCH)) {
      if (await withLogContext({ session_id: run.sessionId, turn_id: run.turnId, run_id: run.id }, () => this.interrupt(run))) interruptedRuns += 1;
    }
    const awaiting = await this.runs.sessionsAwaitingTakeover(SWEEP_BATCH);
    for (const { sessionId, runId } of awaiting) await this.dispatcher.nudgeTakeover(sessionId, runId).catch(() => undefined);
    // Members' ended turns whose delivery to their parent was lost (a crash after commit, Redis
    // down): delivered from Postgres alone, so a waiting coordinator always wakes.
    for (const parentId of await this.cooperation.undelivered(this.config.recoveryGraceMs, SWEEP_BATCH)) {
      const delivered = await this.cooperation.deliver(parentId).catch((error: unknown) => this.logger.warn(`delivery to ${parentId} failed: ${String(error)}`));
      if (delivered) await this.afterCommit.send(delivered);
    }
    const waiting = await this.inputs.sessionsWithWaitingInputs(new Date(Date.now() - this.config.recoveryGraceMs), SWEEP_BATCH, ACTIVE_TURN_STATUSES);
    // The job itself, never a wake-up: a frozen worker's linger must not hold these inputs again.
    for (const sessionId of waiting) await this.dispatcher.enqueueQuietly(sessionId);
    // Members queued behind their tree's cap: each tree's next one (the cap admits in order).
    for (const sessionId of await this.cooperation.queuedHeads(this.config.recoveryGraceMs, SWEEP_BATCH)) await this.dispatcher.nudgeQueuedMember(sessionId);
    const preparationsResumed = await this.resumePreparations();
    const receiptsDeleted = await inBatches((limit) => this.idempotency.deleteExpired(limit));
    const eventsPruned = await inBatches((limit) => this.outbox.prune(this.config.eventsReplayTtlSeconds, limit));
    // Logged when something changed (runs interrupted, other sessions re-dispatched); the same
    // sessions re-dispatched sweep after sweep are one condition, logged once per interval.
    const redispatched = waiting.join(',');
    const now = Date.now();
    const changed = interruptedRuns > 0 || redispatched !== this.lastRedispatched;
    if ((interruptedRuns > 0 || waiting.length > 0) && (changed || now - this.lastReportAt >= REPEATED_CONDITION_LOG_MS)) {
      this.logger.log(`sweep: ${interruptedRuns} expired runs interrupted, ${waiting.length} idle sessions with waiting inputs re-dispatched`);
      this.lastReportAt = now;
    }
    this.lastRedispatched = redispatched;
    return { interruptedRuns, takeoversNudged: awaiting.length, redispatched: waiting.length, receiptsDeleted, eventsPruned, preparationsResumed };
  }

  /**
   * Inputs still preparing their attachments whose next try is due (a worker died mid-copy, the
   * job was lost, storage failed): the same preparation runs again, in the background so that a
   * slow store never holds up the rest of the sweep. Each input is retried with exponential
   * backoff (InputsRepository.takeDuePreparations), so preparations that keep failing never starve
   * the others. Preparations of cancelled inputs and archived sessions finish too: a cancelled
   * input's files stay in the session's workdir, where the agent's tools still read them.
   */
  private async resumePreparations(): Promise<number> {
    const room = PREPARATIONS_PER_PROCESS - this.preparer.running;
    if (room <= 0) return 0;
    const due = await this.inputs.takeDuePreparations(room);
    for (const inputId of due) void this.preparer.prepare(inputId).catch((error: unknown) => this.logger.warn(`preparation of input ${inputId} failed: ${String(error)}`));
    return due.length;
  }

  private async interrupt(run: RunEntity): Promise<boolean> {
    // What clients saw of the run is in the stream; read before the transaction, never inside it.
    // Without the stream (Redis down) the checkpoint stands in, and clients are told to resync:
    // an item they saw announced may end with less text than they saw, or not at all.
    const shown = await this.publisher.shownText(run.sessionId, run.id).catch(() => null);
    const result = await this.recovery.interruptExpired(run, shown);
    if (!result) return false;
    metrics.runTakenOver('lease_expired');
    await this.afterCommit.send(result);
    this.logger.warn(`run ${run.id} of session ${run.sessionId}: lease expired; ${result.awaiting ? `run ${result.awaiting} continues the turn` : 'the turn ended'}`);
    return true;
  }
}
