import { Injectable, Logger } from '@nestjs/common';
import { withLogContext } from '#libs/config';
import { EventPublisher } from '#libs/events';
import { AfterCommit, type RunEntity, RunRecovery, RunsRepository } from '#libs/engine';
import { SessionDispatcher } from '#libs/queue';
import { metrics } from '#libs/metrics';
import { SWEEP_BATCH } from './sweep-limits.js';

/**
 * The sweep's part for runs whose worker died: a run whose lease expired is interrupted and its turn
 * continues in a new run on another worker (takeover, not failure), and a run waiting for a worker
 * whose nudge was lost is nudged again. Decided in Postgres (RunRecovery), so sweeps may overlap.
 */
@Injectable()
export class LeaseTakeovers {
  private readonly logger = new Logger(LeaseTakeovers.name);

  constructor(
    private readonly recovery: RunRecovery,
    private readonly runs: RunsRepository,
    private readonly dispatcher: SessionDispatcher,
    private readonly publisher: EventPublisher,
    private readonly afterCommit: AfterCommit,
  ) {}

  /** Interrupts the runs whose lease expired; how many this sweep interrupted (another may have first). */
  async interruptExpired(): Promise<number> {
    let interrupted = 0;
    for (const run of await this.runs.expiredRuns(SWEEP_BATCH)) {
      if (await withLogContext({ session_id: run.sessionId, turn_id: run.turnId, run_id: run.id }, () => this.interrupt(run))) interrupted += 1;
    }
    return interrupted;
  }

  /** Nudges again each run that waits for a worker to take its turn over; a failed nudge stops nothing. How many were found. */
  async nudgeAwaiting(): Promise<number> {
    const awaiting = await this.runs.sessionsAwaitingTakeover(SWEEP_BATCH);
    for (const { sessionId, runId } of awaiting) await this.dispatcher.nudgeTakeover(sessionId, runId).catch(() => undefined);
    return awaiting.length;
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
