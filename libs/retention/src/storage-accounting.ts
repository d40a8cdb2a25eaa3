import { Injectable } from '@nestjs/common';
import type { RetentionBatch, RetentionTask } from '#libs/database';
import { GetSessionStorage, StorageUsageRepository } from '#libs/protocol';

/** Sessions measured per batch at most: each measurement reads the session's rows (one heap fetch each), so a batch stays short. */
export const STORAGE_SESSIONS_PER_BATCH = 20;
/** Owners whose totals a batch re-sums in full, at most (the slow correction of the deltas; each owner once an hour at most). */
export const RESUMMED_OWNERS_PER_BATCH = 2;

/**
 * Storage accounting (issue 43): keeps `storage_usage` (each session's bytes and rows, as the
 * session storage route measures them) and `storage_totals` (per owner and per owner's project)
 * current enough for operators and the quota, without ever reading an owner's rows on request.
 *
 * Run by the retention sweep on its schedule (kind `storage_accounting`; it removes nothing). A
 * batch: (1) reads the outbox since the accounting watermark for the sessions active since, and
 * queues them (a delete queues its sessions itself: it writes no event); (2) measures up to
 * STORAGE_SESSIONS_PER_BATCH queued sessions, oldest mark first, each recorded with the change it
 * makes applied to its owner's totals in the same transaction (a deleted session is not measured:
 * it stops counting); (3) re-sums in full the totals of up to RESUMMED_OWNERS_PER_BATCH owners not
 * re-summed for an hour, a correction only. Every step is bounded; a batch killed midway leaves
 * marks that the next batch measures. A purge takes its sessions' rows out itself (SessionPurge).
 *
 * What is stored without an outbox event (nothing known today besides a session's files bound with
 * an input, whose input is an event) is measured at the session's next event.
 */
@Injectable()
export class StorageAccounting implements RetentionTask {
  readonly kind = 'storage_accounting' as const;

  constructor(
    private readonly usage: StorageUsageRepository,
    private readonly storage: GetSessionStorage,
  ) {}

  async runBatch(limit: number): Promise<RetentionBatch> {
    const caughtUp = await this.usage.markActive();
    const full = await this.measureStale(Math.max(1, Math.min(limit, STORAGE_SESSIONS_PER_BATCH)));
    await this.usage.resum(RESUMMED_OWNERS_PER_BATCH);
    return { rows: 0, bytes: 0, more: !caughtUp || full };
  }

  lagSeconds(): Promise<number> {
    return this.usage.lagSeconds();
  }

  /** Step 2: true when it found `count` sessions (more may wait). A failed measurement is rethrown after the others (the sweep counts it). */
  private async measureStale(count: number): Promise<boolean> {
    const queued = await this.usage.stale(count);
    let failure: unknown = null;
    for (const session of queued) {
      if (session.deleted) {
        await this.usage.record(session, null);
        continue;
      }
      let measured;
      try {
        measured = await this.storage.measure(session.sessionId, session.workdirId);
      } catch (error) {
        // A session too large to read in time (or a failed read) goes to the back of the queue, not in the way of the others.
        await this.usage.requeue(session.sessionId);
        failure = error;
        continue;
      }
      await this.usage.record(session, { bytes: measured.figures.total_bytes, rows: measured.rows });
    }
    if (failure !== null) throw failure;
    return queued.length === count;
  }
}
