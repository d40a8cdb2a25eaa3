import { Injectable, Module } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId, prepared } from '#libs/database';
import { QueueModule, WebhookJobs } from '#libs/queue';
import type { WebhookPayload } from './webhook-events.js';
import { WebhooksRepository } from './webhooks.repository.js';

/** A delivery chain to nudge after commit. */
export interface WebhookChain {
  endpointId: string;
  chain: string;
}

/**
 * Webhooks of facts that belong to no session (an automation's failure): one standalone delivery
 * per enabled endpoint of the owner that takes the type, written in the caller's transaction with
 * the fact, so neither exists without the other. Each is its own chain (it waits for no one).
 */
@Injectable()
export class StandaloneWebhooks {
  constructor(
    private readonly endpoints: WebhooksRepository,
    private readonly jobs: WebhookJobs,
  ) {}

  /** Writes the deliveries of `payload` (its `id` the receiver's dedup key); returns the chains to nudge once the transaction commits. */
  async write(manager: EntityManager, ownerId: string, payload: WebhookPayload): Promise<WebhookChain[]> {
    // Key-share locked: an endpoint deleted meanwhile is skipped, never a foreign-key failure of the fact's transaction.
    const rows = (await manager.query(
      prepared(`SELECT id FROM webhook_endpoints WHERE owner_id = $1 AND enabled AND (event_types IS NULL OR $2 = ANY (event_types)) FOR KEY SHARE`),
      [ownerId, payload.type],
    )) as { id: string }[];
    const chains: WebhookChain[] = [];
    for (const { id: endpointId } of rows) {
      const id = newId();
      await this.endpoints.insertStandalone(manager, { id, endpointId, eventId: payload.id, eventType: payload.type, sessionId: null, payload: JSON.stringify(payload), redeliveryOf: null });
      chains.push({ endpointId, chain: id });
    }
    return chains;
  }

  /** After commit, never throws: a lost nudge is what the webhook sweep is for. */
  nudge(chains: WebhookChain[]): Promise<void> {
    return this.jobs.nudgeQuietly(chains);
  }
}

/** The standalone deliveries, for a lib that writes them in its own transactions (automations). */
@Module({
  imports: [QueueModule],
  providers: [WebhooksRepository, StandaloneWebhooks],
  exports: [StandaloneWebhooks],
})
export class StandaloneWebhooksModule {}
