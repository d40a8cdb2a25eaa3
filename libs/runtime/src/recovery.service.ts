import { Injectable, Logger } from '@nestjs/common';
import { REPEATED_CONDITION_LOG_MS } from '#libs/config';
import { ExpiredRowsCleanup } from './expired-rows-cleanup.js';
import { LeaseTakeovers } from './lease-takeovers.js';
import { PreparationResumption } from './preparation-resumption.js';
import { WaitingWorkNudges } from './waiting-work-nudges.js';

export interface SweepReport {
  interruptedRuns: number;
  takeoversNudged: number;
  redispatched: number;
  receiptsDeleted: number;
  eventsPruned: number;
  preparationsResumed: number;
}

/**
 * Repairs what lost messages and dead workers leave behind, one part per concern: runs whose lease
 * expired and takeovers whose nudge was lost (LeaseTakeovers), work that waits with nothing to wake it
 * (WaitingWorkNudges), interrupted attachment preparations (PreparationResumption), and expired
 * receipts and outbox rows (ExpiredRowsCleanup). Each step is idempotent and decided in Postgres, so
 * several workers may sweep at once.
 */
@Injectable()
export class RecoveryService {
  private readonly logger = new Logger(RecoveryService.name);
  /** The sessions the last sweep re-dispatched, and when a sweep last said so. */
  private lastRedispatched = '';
  private lastReportAt = 0;

  constructor(
    private readonly takeovers: LeaseTakeovers,
    private readonly waitingWork: WaitingWorkNudges,
    private readonly preparations: PreparationResumption,
    private readonly cleanup: ExpiredRowsCleanup,
  ) {}

  async sweep(): Promise<SweepReport> {
    const interruptedRuns = await this.takeovers.interruptExpired();
    const takeoversNudged = await this.takeovers.nudgeAwaiting();
    await this.waitingWork.deliverLostDeliveries();
    const waiting = await this.waitingWork.redispatchWaitingInputs();
    await this.waitingWork.nudgeQueuedMembers();
    const preparationsResumed = await this.preparations.resume();
    const receiptsDeleted = await this.cleanup.deleteExpiredReceipts();
    const eventsPruned = await this.cleanup.pruneOutbox();
    this.report(interruptedRuns, waiting);
    return { interruptedRuns, takeoversNudged, redispatched: waiting.length, receiptsDeleted, eventsPruned, preparationsResumed };
  }

  /**
   * Logged when something changed (runs interrupted, other sessions re-dispatched); the same
   * sessions re-dispatched sweep after sweep are one condition, logged once per interval.
   */
  private report(interruptedRuns: number, waiting: string[]): void {
    const redispatched = waiting.join(',');
    const now = Date.now();
    const changed = interruptedRuns > 0 || redispatched !== this.lastRedispatched;
    if ((interruptedRuns > 0 || waiting.length > 0) && (changed || now - this.lastReportAt >= REPEATED_CONDITION_LOG_MS)) {
      this.logger.log(`sweep: ${interruptedRuns} expired runs interrupted, ${waiting.length} idle sessions with waiting inputs re-dispatched`);
      this.lastReportAt = now;
    }
    this.lastRedispatched = redispatched;
  }
}
