import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { ACTIVE_TURN_STATUSES, AfterCommit, CooperationWaits, InputsRepository } from '#libs/engine';
import { SessionDispatcher } from '#libs/queue';
import { SWEEP_BATCH } from './sweep-limits.js';

/**
 * The sweep's part for work that waits with nothing left to wake it, because a message was lost (a
 * crash after commit, Redis down): members' ended turns not delivered to their parent, sessions whose
 * inputs wait with nothing running, and members queued behind their tree's cap. Each is found in
 * Postgres past the recovery grace, so work still on its way is left alone.
 */
@Injectable()
export class WaitingWorkNudges {
  private readonly logger = new Logger(WaitingWorkNudges.name);

  constructor(
    private readonly inputs: InputsRepository,
    private readonly cooperation: CooperationWaits,
    private readonly dispatcher: SessionDispatcher,
    private readonly afterCommit: AfterCommit,
    private readonly config: AppConfig,
  ) {}

  /** Delivers members' ended turns from Postgres alone, so a waiting coordinator always wakes; a failed delivery stops nothing. */
  async deliverLostDeliveries(): Promise<void> {
    for (const parentId of await this.cooperation.undelivered(this.config.recoveryGraceMs, SWEEP_BATCH)) {
      const delivered = await this.cooperation.deliver(parentId).catch((error: unknown) => this.logger.warn(`delivery to ${parentId} failed: ${String(error)}`));
      if (delivered) await this.afterCommit.send(delivered);
    }
  }

  /** Enqueues again each idle session whose inputs wait; the sessions it enqueued. */
  async redispatchWaitingInputs(): Promise<string[]> {
    const waiting = await this.inputs.sessionsWithWaitingInputs(new Date(Date.now() - this.config.recoveryGraceMs), SWEEP_BATCH, ACTIVE_TURN_STATUSES);
    // The job itself, never a wake-up: a frozen worker's linger must not hold these inputs again.
    for (const sessionId of waiting) await this.dispatcher.enqueueQuietly(sessionId);
    return waiting;
  }

  /** Members queued behind their tree's cap: each tree's next one (the cap admits in order). */
  async nudgeQueuedMembers(): Promise<void> {
    for (const sessionId of await this.cooperation.queuedHeads(this.config.recoveryGraceMs, SWEEP_BATCH)) await this.dispatcher.nudgeQueuedMember(sessionId);
  }
}
