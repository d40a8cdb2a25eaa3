// Webhooks (README "Webhooks"): endpoints, the thin payloads the session
// outbox fans out, and the delivery engine the worker runs.
export { isPublicAddress } from '#libs/outbound';
export { checkWebhookUrl, guardedLookup, WEBHOOK_BLOCKED_CODE } from './delivery/address-policy.js';
export type { WebhookUrlCheck } from './delivery/address-policy.js';
export {
  DEFAULT_DISABLE_AFTER_MS,
  DEFAULT_RETRY_SCHEDULE_MS,
  endpointVerdict,
  parseRetryAfter,
  parseRetrySchedule,
  RETRY_AFTER_CAP_MS,
  retryDelayMs,
} from './delivery/retry-schedule.js';
export type { EndpointVerdict } from './delivery/retry-schedule.js';
export { generateWebhookSecret, secretBytes, signatureHeader, WEBHOOK_SECRET_PREFIX } from './delivery/signature.js';
export { deliveryTurnAttribute, WebhookDeliverer } from './delivery/webhook-deliverer.js';
export { type SendResult, WebhookSender } from './delivery/webhook-sender.js';
export { WebhookSweep } from './delivery/webhook-sweep.js';
export {
  CreateWebhookEndpoint,
  DeleteWebhookEndpoint,
  GetWebhookEndpoint,
  ListWebhookDeliveries,
  ListWebhookEndpoints,
  RedeliverWebhook,
  RotateWebhookSecret,
  SendWebhookTest,
  UpdateWebhookEndpoint,
  type WebhookActor,
} from './use-cases/webhook-endpoints.use-cases.js';
export {
  CreateWebhookEndpointDto,
  MAX_WEBHOOK_ENDPOINTS,
  UpdateWebhookEndpointDto,
  WebhookAttemptDto,
  WebhookDeliveryDto,
  WebhookDeliveryListDto,
  WebhookDeliveryListQueryDto,
  WebhookEndpointDeletedDto,
  WebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointWithSecretDto,
} from './webhook.dto.js';
export { StandaloneWebhooks, StandaloneWebhooksModule, type WebhookChain } from './standalone-webhooks.js';
export { isWebhookEventType, SESSION_WEBHOOK_TYPES, STANDALONE_WEBHOOK_TYPES, type StampedEvent, WEBHOOK_EVENT_TYPES, type WebhookEventType, type WebhookPayload, webhookPayloadOf } from './webhook-events.js';
export { deliveryTrace, WEBHOOK_FAN_OUT, webhookFanOut, WebhookOutboxModule } from './webhook-outbox-subscriber.js';
export { WebhookDeliveryModule, WebhooksModule } from './webhooks.module.js';
export {
  PENDING_DELIVERY,
  WEBHOOK_DELIVERY_MACHINE,
  WEBHOOK_DISABLED_REASON_MACHINE,
  WEBHOOK_ENDPOINT_MACHINE,
  type WebhookDeliveryStatus,
  type WebhookEndpointState,
  webhookEndpointState,
} from './webhook-states.js';
