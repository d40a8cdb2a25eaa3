import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { ThrottledLog } from '#libs/config';
import type { Queue } from 'bullmq';
import { metrics } from '#libs/metrics';
import { JOBS, type JobPayloads, QUEUES } from './queue-names.js';
import { SessionLinger } from './session-linger.js';

/**
 * Nudges the worker that a session may have work. A nudge carries no facts (Postgres holds them),
 * so losing one only delays work until the recovery sweep; deduplication keeps at most one waiting
 * and one active job per session, which is what serialises one session onto one worker.
 */
@Injectable()
export class SessionDispatcher {
  private readonly log = new ThrottledLog(new Logger(SessionDispatcher.name));

  constructor(
    @InjectQueue(QUEUES.sessions) private readonly queue: Queue<JobPayloads['session.dispatch']>,
    private readonly linger: SessionLinger,
  ) {}

  async nudge(sessionId: string): Promise<void> {
    await this.queue.add(
      JOBS.dispatchSession,
      { sessionId },
      { deduplication: { id: sessionId, keepLastIfActive: true }, removeOnComplete: true, removeOnFail: 1000 },
    );
  }

  /**
   * Nudges for a run that waits to be taken over, under a job id of its own: the session's dedup
   * key may still be held by the job of the worker that died, and Postgres (the run's lease), not
   * the job, decides who drives the session.
   */
  async nudgeTakeover(sessionId: string, runId: string): Promise<void> {
    await this.queue.add(
      JOBS.dispatchSession,
      { sessionId, takeover: true },
      { deduplication: { id: `takeover:${runId}` }, removeOnComplete: true, removeOnFail: 1000 },
    );
  }

  /**
   * Nudges because an input became claimable (its attachments are ready), under a job id of that
   * input's own: the session's dedup key may be held by the job of a worker that died (until
   * BullMQ declares it stalled), and the input must not wait for that. A failure is logged; the
   * sweep re-dispatches idle sessions with waiting inputs.
   */
  async nudgeReadyInput(sessionId: string, inputId: string): Promise<void> {
    try {
      await this.queue.add(JOBS.dispatchSession, { sessionId, readyInputId: inputId }, { deduplication: { id: `ready:${inputId}` }, removeOnComplete: true, removeOnFail: 1000 });
    } catch (error) {
      metrics.redisError('queue');
      this.log.warn(`dispatch nudges are failing; the outbox relay and the recovery sweep will retry: ${String(error)}`);
    }
  }

  /**
   * Nudges a member of a cooperation tree that waits for a slot of its tree's cap, under a job id
   * of its own: the session's dedup key may be held by the job of a worker that died (until
   * BullMQ declares it stalled), and a queued member must not wait for that. Quiet, as the sweep
   * sends it again.
   */
  async nudgeQueuedMember(sessionId: string): Promise<void> {
    try {
      await this.queue.add(JOBS.dispatchSession, { sessionId }, { deduplication: { id: `member:${sessionId}` }, removeOnComplete: true, removeOnFail: 1000 });
    } catch (error) {
      metrics.redisError('queue');
      this.log.warn(`dispatch nudges are failing; the outbox relay and the recovery sweep will retry: ${String(error)}`);
    }
  }

  /**
   * For paths that already committed: wakes the worker the session lingers on when one listens
   * (session-linger.ts), else sends the job. A failed nudge is logged, the sweep redelivers it.
   */
  async nudgeQuietly(sessionId: string): Promise<void> {
    if (await this.linger.wake(sessionId)) return;
    await this.enqueueQuietly(sessionId);
  }

  /** The BullMQ job alone, never a wake-up: the recovery sweep's and a busy worker's nudge, which must not depend on the hint. */
  async enqueueQuietly(sessionId: string): Promise<void> {
    try {
      await this.nudge(sessionId);
    } catch (error) {
      metrics.redisError('queue');
      // A Redis outage fails every nudge: one line per interval, not one per request.
      this.log.warn(`dispatch nudges are failing; the outbox relay and the recovery sweep will retry: ${String(error)}`);
    }
  }
}
