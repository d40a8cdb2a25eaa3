import { Inject, Injectable, Logger } from '@nestjs/common';
import { AppConfig, ThrottledLog } from '#libs/config';
import type { RetentionKind, RetentionTask } from '#libs/database';
import { metrics } from '#libs/metrics';

/** The retention tasks the worker runs (RetentionModule provides the list; each lib owns its task). */
export const RETENTION_TASKS = Symbol('RETENTION_TASKS');

/** At most this many batches per task in one tick: a sweep stays short; a backlog is worked off tick after tick. */
export const RETENTION_BATCHES_PER_TICK = 20;

export interface RetentionTickReport {
  kind: RetentionKind;
  rows: number;
  bytes: number;
  batches: number;
  failed: boolean;
}

/**
 * Runs every retention task once per RETENTION_SWEEP_MS (the maintenance queue's `retention.sweep`
 * job, one worker at a time per tick): each task in batches of RETENTION_BATCH_ROWS until nothing
 * more is due or RETENTION_BATCHES_PER_TICK ran; the lag gauge reads 0 when it drained, else the
 * task's lag (the backlog the next tick continues). A failing task
 * is logged (throttled) and counted; the others still run, and the next tick retries it.
 */
@Injectable()
export class RetentionSweep {
  private readonly failures = new ThrottledLog(new Logger('Retention'));

  constructor(
    @Inject(RETENTION_TASKS) private readonly tasks: RetentionTask[],
    private readonly config: AppConfig,
  ) {
    // Every kind's series from the start (0 until it removes something or fails): a dashboard sees each one.
    for (const task of tasks) {
      metrics.retentionRemoved(task.kind);
      metrics.retentionFailed(task.kind, 0);
      metrics.retentionLagSeen(task.kind, 0);
    }
  }

  async run(): Promise<RetentionTickReport[]> {
    const reports: RetentionTickReport[] = [];
    for (const task of this.tasks) reports.push(await this.runTask(task));
    return reports;
  }

  private async runTask(task: RetentionTask): Promise<RetentionTickReport> {
    const report: RetentionTickReport = { kind: task.kind, rows: 0, bytes: 0, batches: 0, failed: false };
    try {
      let more = true;
      while (more && report.batches < RETENTION_BATCHES_PER_TICK) {
        const done = await task.runBatch(this.config.retentionBatchRows);
        report.batches += 1;
        report.rows += done.rows;
        report.bytes += done.bytes;
        metrics.retentionRemoved(task.kind, done.rows, done.bytes);
        more = done.more;
      }
      // Drained: nothing is due now, so the lag is 0 without a read (an idle tick costs each task
      // its one probe). A backlog left for the next tick is measured.
      metrics.retentionLagSeen(task.kind, more ? await task.lagSeconds() : 0);
    } catch (error) {
      report.failed = true;
      metrics.retentionFailed(task.kind);
      this.failures.warn(`retention ${task.kind} failed: ${error instanceof Error ? error.message : String(error)}`, task.kind);
    }
    return report;
  }
}
