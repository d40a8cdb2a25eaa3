import { Module } from '@nestjs/common';
import { AuditModule } from '#libs/audit';
import { QueueModule } from '#libs/queue';
import { DeliveryStore } from './delivery/delivery-store.js';
import { WebhookDeliverer } from './delivery/webhook-deliverer.js';
import { WebhookSweep } from './delivery/webhook-sweep.js';
import { WebhookOutboxModule } from './webhook-outbox-subscriber.js';
import {
  CreateWebhookEndpoint,
  DeleteWebhookEndpoint,
  GetWebhookEndpoint,
  ListWebhookDeliveries,
  ListWebhookEndpoints,
  RedeliverWebhook,
  RotateWebhookSecret,
  SendWebhookTest,
  UpdateWebhookEndpoint,
  WebhookSecrets,
  WebhookUrlPolicy,
} from './use-cases/webhook-endpoints.use-cases.js';
import { WebhooksRepository } from './webhooks.repository.js';

const USE_CASES = [
  CreateWebhookEndpoint,
  ListWebhookEndpoints,
  GetWebhookEndpoint,
  UpdateWebhookEndpoint,
  DeleteWebhookEndpoint,
  RotateWebhookSecret,
  SendWebhookTest,
  ListWebhookDeliveries,
  RedeliverWebhook,
];

/** The api's side: endpoints and their delivery log, one use case per operation; its outbox fans deliveries out. */
@Module({
  imports: [AuditModule, QueueModule, WebhookOutboxModule],
  providers: [WebhooksRepository, WebhookUrlPolicy, WebhookSecrets, ...USE_CASES],
  exports: USE_CASES,
})
export class WebhooksModule {}

/** The worker's side: the delivery engine and its sweep; its outbox fans deliveries out. */
@Module({
  imports: [AuditModule, QueueModule, WebhookOutboxModule],
  providers: [DeliveryStore, WebhookDeliverer, WebhookSweep],
  exports: [WebhookDeliverer, WebhookSweep],
})
export class WebhookDeliveryModule {}
