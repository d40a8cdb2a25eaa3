import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { isDependencyUnavailable } from '#libs/errors';
import type { Lease } from '#libs/engine';
import { FencingStats } from './fencing-stats.js';
import type { RunTrace } from './run-spans.js';

const RETRY_MAX_DELAY_MS = 2_000;

/** The log context of every line about a held run's execution (operators grep for it). */
export const RUN_LOG_CONTEXT = 'RunExecutor';

/** How a held run writes through its lease: retried while the database is unreachable, and what a lost lease leaves. */
@Injectable()
export class DurableWrites {
  private readonly logger = new Logger(RUN_LOG_CONTEXT);

  constructor(
    private readonly config: AppConfig,
    private readonly stats: FencingStats,
  ) {}

  /**
   * A write through the lease, retried while the database is unreachable; undefined when it stayed
   * unreachable for longer than the lease (recovery then continues the turn elsewhere). A step
   * write (`rethrow`) that fails for another reason throws (the run fails); a settlement that does
   * is left to recovery.
   */
  async retrying<T>(lease: Lease, write: () => Promise<T>, rethrow = false): Promise<T | undefined> {
    const deadline = Date.now() + this.config.runLeaseMs;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await write();
      } catch (error) {
        if (!isDependencyUnavailable(error) && rethrow) throw error;
        if (!isDependencyUnavailable(error) || Date.now() > deadline) {
          this.logger.error(`run ${lease.runId} could not write; recovery will continue its turn: ${String(error)}`);
          return undefined;
        }
        await sleep(Math.min(100 * 2 ** attempt, RETRY_MAX_DELAY_MS));
      }
    }
  }

  /**
   * A durable step's commit through the lease (`retrying`, a failure other than the database's
   * rethrown unless `rethrow` is false), in a `commit_step` span (`yuxi.step.kind`) when the run is traced.
   */
  commitStep<T>(run: { lease: Lease; trace: RunTrace | undefined }, kind: string, write: () => Promise<T>, rethrow = true): Promise<T | undefined> {
    if (!run.trace) return this.retrying(run.lease, write, rethrow);
    return run.trace.commitStep(kind, () => this.retrying(run.lease, write, rethrow));
  }

  /** The lease is gone: this worker writes nothing more of the run. */
  fenced(lease: Lease, what: string): void {
    this.stats.fencedWrites += 1;
    this.logger.warn(`run ${lease.runId} stopped at ${what}: its lease is gone (epoch ${lease.epoch}); nothing more is written`);
  }
}
