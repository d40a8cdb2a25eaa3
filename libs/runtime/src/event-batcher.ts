import type { LoggerService } from '@nestjs/common';
import type { EventPublisher, OutgoingEvent } from '#libs/events';

/**
 * Publishes a run's events in order while letting events produced in the same tick (a burst of
 * deltas, the claim and the first item events) travel in one Redis call. Flushes are serialised,
 * so order is preserved; `drain` resolves when everything pushed so far is sent. Publishing is best
 * effort: after a Redis failure the rest of the run's stream events are dropped (a later batch
 * would arrive out of order), logged once, and the run itself carries on.
 */
export class EventBatcher {
  private buffer: OutgoingEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  private failure: unknown = null;

  constructor(
    private readonly publisher: EventPublisher,
    private readonly sessionId: string,
    private readonly logger: LoggerService,
  ) {}

  push(...events: OutgoingEvent[]): void {
    this.buffer.push(...events);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.buffer;
      this.buffer = [];
      // After a failure nothing more is sent: a later batch would reach subscribers out of order.
      this.flushing = this.flushing
        .then(() => (this.failure === null ? this.publisher.publish(this.sessionId, batch) : undefined))
        .then(
          () => undefined,
          (error: unknown) => {
            if (this.failure === null) this.logger.error(`stream events for ${this.sessionId} dropped: ${String(error)}`);
            this.failure ??= error;
          },
        );
    });
  }

  /** Waits until every pushed event was sent (or dropped after a failure). */
  async drain(): Promise<void> {
    while (this.scheduled || this.buffer.length > 0) await new Promise((resolve) => setImmediate(resolve));
    await this.flushing;
  }
}
