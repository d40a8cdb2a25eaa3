import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { AppConfig } from '#libs/config';
import { JOBS, QUEUES } from '#libs/queue';

/**
 * The maintenance sweeps' schedules (recovery, files, webhooks, automations, retention): BullMQ job schedulers on the
 * maintenance queue, kept in place while the worker runs. WorkerBootstrap starts and stops them.
 */
@Injectable()
export class SweepSchedule {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    @InjectQueue(QUEUES.maintenance) private readonly maintenanceQueue: Queue,
    private readonly config: AppConfig,
  ) {}

  /** Puts the schedules in place, then again every so often: they live in Redis, and if Redis loses its data the next call puts them back. */
  async start(): Promise<void> {
    await this.schedule();
    this.timer = setInterval(() => void this.schedule().catch(() => undefined), Math.max(Math.min(this.config.recoverySweepMs, this.config.fileSweepMs, this.config.webhookSweepMs, this.config.automationSweepMs, this.config.retentionSweepMs), 5_000));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async schedule(): Promise<void> {
    await this.maintenanceQueue.upsertJobScheduler(
      'recovery-sweep',
      { every: this.config.recoverySweepMs },
      { name: JOBS.recoverySweep, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
    await this.maintenanceQueue.upsertJobScheduler(
      'files-sweep',
      { every: this.config.fileSweepMs },
      { name: JOBS.filesSweep, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
    await this.maintenanceQueue.upsertJobScheduler(
      'webhooks-sweep',
      { every: this.config.webhookSweepMs },
      { name: JOBS.webhooksSweep, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
    await this.maintenanceQueue.upsertJobScheduler(
      'automations-sweep',
      { every: this.config.automationSweepMs },
      { name: JOBS.automationsSweep, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
    await this.maintenanceQueue.upsertJobScheduler(
      'retention-sweep',
      { every: this.config.retentionSweepMs },
      { name: JOBS.retentionSweep, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );
  }
}
