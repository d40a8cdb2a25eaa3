import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { EventOutbox } from '#libs/events';
import { IdempotencyService } from '#libs/engine';

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

/** The sweep's deletions: expired idempotency receipts, and outbox rows past the replay window. */
@Injectable()
export class ExpiredRowsCleanup {
  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly outbox: EventOutbox,
    private readonly config: AppConfig,
  ) {}

  /** How many expired idempotency receipts were deleted. */
  deleteExpiredReceipts(): Promise<number> {
    return inBatches((limit) => this.idempotency.deleteExpired(limit));
  }

  /** How many outbox rows past the replay window were deleted. */
  pruneOutbox(): Promise<number> {
    return inBatches((limit) => this.outbox.prune(this.config.eventsReplayTtlSeconds, limit));
  }
}
