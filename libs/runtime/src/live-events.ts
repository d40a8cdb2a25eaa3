import type { EventPublisher, OutgoingEvent } from '#libs/events';
import type { LeaseKeeper } from './lease-keeper.js';

/**
 * Publishes a run's live-only events (text deltas) in order, batching those produced in the same
 * tick into one Redis call. Each batch is fenced: not after the lease's local deadline, and not
 * when Redis says a newer run holds the session. When a batch cannot be published (Redis down, or
 * the durable events it follows are not in the stream yet), the rest of the item's deltas are
 * dropped and `lost` is set: the next durable write announces the gap with a resync event.
 */
export class LiveEvents {
  private buffer: OutgoingEvent[] = [];
  private flushing: Promise<void> = Promise.resolve();
  private scheduled = false;
  /** Deltas were dropped since the last durable write. */
  lost = false;
  /** A publish was refused because the lease is gone. */
  fenced = false;
  /** The last durable sequence number this run's events follow. */
  afterSeq = 0;

  constructor(
    private readonly publisher: EventPublisher,
    private readonly sessionId: string,
    private readonly keeper: LeaseKeeper,
    private readonly onFenced: () => void,
  ) {}

  push(...events: OutgoingEvent[]): void {
    if (this.lost || this.fenced) {
      this.lost = true;
      return;
    }
    this.buffer.push(...events);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const batch = this.buffer;
      this.buffer = [];
      this.flushing = this.flushing.then(() => this.send(batch));
    });
  }

  /** Waits until everything pushed so far was sent or dropped. */
  async drain(): Promise<void> {
    while (this.scheduled || this.buffer.length > 0) await new Promise((resolve) => setImmediate(resolve));
    await this.flushing;
  }

  /** A durable write announced the gap (or there was none): deltas may flow again. */
  resetLoss(): void {
    this.lost = false;
  }

  private async send(batch: OutgoingEvent[]): Promise<void> {
    if (batch.length === 0) return;
    if (this.lost || this.fenced) {
      this.lost = true;
      return;
    }
    if (!this.keeper.held()) {
      this.refuse();
      return;
    }
    try {
      const outcome = await this.publisher.publishLive(this.sessionId, this.keeper.lease.epoch, this.afterSeq, batch);
      if (outcome === 'fenced') this.refuse();
      else if (outcome === 'behind') this.lost = true;
    } catch {
      this.lost = true;
    }
  }

  private refuse(): void {
    this.fenced = true;
    this.lost = true;
    this.onFenced();
  }
}
