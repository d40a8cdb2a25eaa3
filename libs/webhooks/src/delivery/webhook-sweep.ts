import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { metrics } from '#libs/metrics';
import { WebhookJobs } from '#libs/queue';
import { DeliveryStore } from './delivery-store.js';

const SWEEP_CHAINS = 500;
const PRUNE_BATCH = 1_000;

/**
 * The webhook backstop (the maintenance queue, every WEBHOOK_SWEEP_MS): hands every due chain
 * nobody attempts to a job (its job was lost with Redis, or its worker died mid-attempt and the
 * lease expired), counts the backlog for the gauge, and deletes finished deliveries past the
 * retention. Nothing committed waits on Redis to be delivered: only on this sweep.
 */
@Injectable()
export class WebhookSweep {
  constructor(
    private readonly store: DeliveryStore,
    private readonly jobs: WebhookJobs,
    private readonly config: AppConfig,
  ) {}

  async run(): Promise<{ due: number; pruned: number }> {
    const due = await this.store.dueChains(SWEEP_CHAINS);
    for (const chain of due) await this.jobs.later({ endpointId: chain.endpointId, chain: chain.chain }, 0, `due:${chain.deliveryId}:${chain.attempts}`);
    metrics.webhookPending(await this.store.pendingCount());
    const pruned = await this.store.prune(this.config.webhookRetentionS, PRUNE_BATCH);
    return { due: due.length, pruned };
  }
}
