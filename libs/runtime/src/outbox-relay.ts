import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, ThrottledLog } from '#libs/config';
import { EventOutbox } from '#libs/events';
import { SessionDispatcher } from '#libs/queue';

/**
 * Publishes outbox rows that their writer could not (Redis was down, the process died between
 * commit and publish), in sequence order per session, and nudges the sessions whose relayed rows
 * announced an accepted input. Every worker relays; the stream's sequence check makes concurrent
 * relays of one session harmless.
 */
@Injectable()
export class OutboxRelay {
  /** An outage fails every pass (one each OUTBOX_RELAY_MS): one line per interval says so. */
  private readonly log = new ThrottledLog(new Logger(OutboxRelay.name));
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
          (error: unknown) => this.log.warn(`relay passes are failing: ${String(error)}`),
        )
        .finally(() => (this.running = null));
    }, this.config.outboxRelayMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /**
   * One pass over the relay window: every session with recent rows the stream lacks is caught up
   * (and nudged when a lagging row announced an accepted input); the window moves on only when
   * all of them are. Returns how many sessions lagged, or null when another worker holds the window.
   */
  async pass(): Promise<number | null> {
    return this.outbox.relayWindow(this.config.outboxRelayMs, async (lagging) => {
      let caughtUp = true;
      for (const { sessionId, nudge } of lagging) {
        const result = await this.outbox.flush(sessionId);
        caughtUp &&= result.complete;
        if (result.complete && nudge) await this.dispatcher.nudgeQuietly(sessionId);
      }
      return caughtUp;
    });
  }
}
