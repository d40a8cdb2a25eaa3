import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { ThrottledLog } from '#libs/config';
import { metrics } from '#libs/metrics';
import { JOBS, type JobPayloads, QUEUES } from './queue-names.js';

/**
 * Asks a worker to prepare an input's attachments (copy them into the session workdir). Like a
 * session nudge, the job carries no facts: the input's `attachment_status` in Postgres is the
 * truth, and the recovery sweep prepares whatever a lost job left behind.
 */
@Injectable()
export class AttachmentJobs {
  private readonly log = new ThrottledLog(new Logger(AttachmentJobs.name));

  constructor(@InjectQueue(QUEUES.files) private readonly queue: Queue<JobPayloads['attachments.prepare']>) {}

  /** For request paths that already committed the input: a failed enqueue is logged, the sweep covers it. */
  async prepareQuietly(inputId: string): Promise<void> {
    try {
      await this.queue.add(JOBS.prepareAttachments, { inputId }, { deduplication: { id: `prepare:${inputId}` }, removeOnComplete: true, removeOnFail: 1000 });
    } catch (error) {
      metrics.redisError('queue');
      this.log.warn(`attachment preparation jobs are failing; the recovery sweep will prepare them: ${String(error)}`);
    }
  }
}
