import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { EventOutbox } from '#libs/events';
import { SessionDispatcher } from '#libs/queue';

const SESSIONS_PER_PASS = 200;

/**
 * Publishes outbox rows that their writer could not (Redis was down, the process died between
 * commit and publish), in sequence order per session, and nudges the sessions whose relayed rows
 * announced an accepted input. Every worker relays; the stream's sequence check makes concurrent
 * relays of one session harmless.
 */
@Injectable()
export class OutboxRelay {
  private readonly logger = new Logger(OutboxRelay.name);
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly outbox: EventOutbox,
    private readonly dispatcher: SessionDispatcher,
    private readonly config: AppConfig,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.pass()
        .then(
          () => undefined,
          (error: unknown) => this.logger.warn(`relay pass failed: ${String(error)}`),
        )
        .finally(() => (this.running = null));
    }, this.config.outboxRelayMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass over the sessions whose rows waited longer than one interval (their writer had its chance). */
  async pass(): Promise<number> {
    const sessions = await this.outbox.laggingSessions(this.config.outboxRelayMs, SESSIONS_PER_PASS);
    let relayed = 0;
    for (const sessionId of sessions) {
      const result = await this.outbox.flush(sessionId);
      if (!result.complete) continue;
      relayed += 1;
      if (result.nudge) await this.dispatcher.nudgeQuietly(sessionId);
    }
    return relayed;
  }
}
