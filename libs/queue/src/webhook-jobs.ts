import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { ThrottledLog } from '#libs/config';
import { metrics } from '#libs/metrics';
import { JOBS, type JobPayloads, QUEUES } from './queue-names.js';

type Chain = JobPayloads['webhooks.deliver'];

/**
 * Asks a worker to attempt a chain of webhook deliveries: now (new deliveries were committed), or
 * later (a retry's time). The job carries no facts: a delivery's row in Postgres is the truth, its
 * lease decides who attempts it, and the webhook sweep finds what a lost job left due. Duplicate
 * jobs are harmless (the second finds the head leased or done), so new deliveries are not
 * deduplicated: a nudge must never be swallowed by a job that already looked.
 */
@Injectable()
export class WebhookJobs {
  private readonly log = new ThrottledLog(new Logger(WebhookJobs.name));

  constructor(@InjectQueue(QUEUES.webhooks) private readonly queue: Queue<Chain>) {}

  /** After a commit that wrote deliveries; never throws (the sweep covers a failed enqueue). */
  async nudgeQuietly(chains: Chain[]): Promise<void> {
    if (chains.length === 0) return;
    try {
      await this.queue.addBulk(chains.map((data) => ({ name: JOBS.deliverWebhooks, data, opts: { removeOnComplete: true, removeOnFail: 1000 } })));
    } catch (error) {
      metrics.redisError('queue');
      this.log.warn(`webhook jobs are failing; the webhook sweep will deliver: ${String(error)}`);
    }
  }

  /** The chain's next attempt, at its time; `key` (the delivery and attempt) keeps a retry from being queued twice. */
  async later(chain: Chain, delayMs: number, key: string): Promise<void> {
    await this.queue.add(JOBS.deliverWebhooks, chain, { delay: Math.max(0, Math.round(delayMs)), deduplication: { id: key }, removeOnComplete: true, removeOnFail: 1000 });
  }
}
