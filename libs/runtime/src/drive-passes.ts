import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { AppConfig, withLogContext } from '#libs/config';
import { RunSignals, SessionDispatcher, SessionLinger } from '#libs/queue';
import { SessionDriver } from './session-driver.js';
import { WORKER_ID } from './worker-identity.js';

const LISTEN_RETRY_MS = 2_000;

/**
 * Every pass of `SessionDriver` on this worker, whether a BullMQ job or a wake-up asked for it
 * (sticky workers, session-linger.ts): a pass marks its session as lingering on this worker, and
 * the api's next nudge for it publishes to this worker's wake channel instead of adding a job.
 *
 * A wake-up for a session this worker drives now makes that pass look at the queue again before it
 * ends (the input may have committed after the pass's settle looked), so the linger key may be
 * written at any point of the pass: an input either finds the key (and its wake-up is acted on
 * here) or finds none and gets its job. A wake-up this worker cannot take (at WORKER_CONCURRENCY,
 * shutting down, or its pass failed) becomes the job, so nothing waits for the recovery sweep.
 */
@Injectable()
export class DrivePasses implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(DrivePasses.name);
  private listening = false;
  private retry: NodeJS.Timeout | undefined;
  private active = 0;
  /** The sessions this worker drives now, each with whether a wake-up arrived during its pass. */
  private readonly driving = new Map<string, boolean>();

  constructor(
    private readonly driver: SessionDriver,
    private readonly linger: SessionLinger,
    private readonly dispatcher: SessionDispatcher,
    private readonly signals: RunSignals,
    private readonly config: AppConfig,
  ) {}

  /**
   * Listens at this worker's address; until it does (Redis slow or out of reach at boot: it tries
   * again every LISTEN_RETRY_MS), no session lingers here and every nudge stays a job.
   */
  async onApplicationBootstrap(): Promise<void> {
    if (this.linger.enabled) await this.listen();
  }

  onApplicationShutdown(): void {
    if (this.retry) clearTimeout(this.retry);
  }

  private async listen(): Promise<void> {
    try {
      await this.signals.onWake(WORKER_ID, (sessionId) => this.wake(sessionId));
      this.listening = true;
    } catch (error) {
      if (!this.retry) this.logger.warn(`not listening for wake-ups yet (nudges stay jobs until it does): ${String(error)}`);
      this.retry = setTimeout(() => void this.listen(), LISTEN_RETRY_MS);
      this.retry.unref();
    }
  }

  /** A dispatch job's pass. */
  drive(sessionId: string, takeover = false, readyInputId?: string): Promise<number> {
    return this.pass(sessionId, () => this.driver.drive(sessionId, takeover, readyInputId));
  }

  /** A wake-up published for `sessionId`: drive it here, or hand it to the queue. */
  wake(sessionId: string): void {
    if (this.driving.has(sessionId)) {
      this.driving.set(sessionId, true);
      return;
    }
    if (this.active >= this.config.workerConcurrency || !this.driver.isClaiming) {
      void this.dispatcher.enqueueQuietly(sessionId);
      return;
    }
    void this.pass(sessionId, () => this.driver.drive(sessionId)).then(
      // A shutdown that began during the pass left what it did not claim to another worker.
      () => (this.driver.isClaiming ? undefined : this.dispatcher.enqueueQuietly(sessionId)),
      (error: unknown) => {
        withLogContext({ session_id: sessionId }, () => this.logger.warn(`a woken pass failed; the session goes to the queue: ${String(error)}`));
        return this.dispatcher.enqueueQuietly(sessionId);
      },
    );
  }

  /** Passes in progress on this worker (jobs and wake-ups together). */
  get inProgress(): number {
    return this.active;
  }

  private async pass(sessionId: string, first: () => Promise<number>): Promise<number> {
    this.active += 1;
    // A job for a session already driven here runs beside that pass (the claim decides); the
    // outer pass alone answers wake-ups.
    const outer = !this.driving.has(sessionId);
    if (outer) this.driving.set(sessionId, false);
    const startedAt = Date.now();
    try {
      if (this.listening) await this.linger.linger(sessionId, WORKER_ID);
      let turns = await first();
      while (outer && this.driving.get(sessionId) === true && this.driver.isClaiming) {
        this.driving.set(sessionId, false);
        turns += await this.driver.drive(sessionId);
      }
      // Shutting down: a wake-up this pass could not act on goes to the queue (another worker).
      if (outer && this.driving.get(sessionId) === true) void this.dispatcher.enqueueQuietly(sessionId);
      return turns;
    } finally {
      this.active -= 1;
      if (outer) this.driving.delete(sessionId);
      // A pass longer than half the window renews it, so the next input finds this worker.
      if (this.listening && Date.now() - startedAt > this.config.workerLingerMs / 2) void this.linger.linger(sessionId, WORKER_ID);
    }
  }
}
