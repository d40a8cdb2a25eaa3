import { paginate } from './paginate.js';
import { type CallOptions, type Query, Transport } from './transport.js';
import type {
  CreateWebhookParams,
  ListWebhookDeliveriesParams,
  ListWebhooksParams,
  UpdateWebhookParams,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointDeleted,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from './types.js';

const WEBHOOKS = '/api/v1/agents/webhooks';

/** `/api/v1/agents/webhooks/{id}/…` with every id encoded. */
function webhookPath(webhookId: string, ...rest: string[]): string {
  return [WEBHOOKS, webhookId, ...rest].map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join('/');
}

/**
 * The caller's webhook endpoints (full-access credentials only) and their delivery log. Deliveries
 * are signed (Standard Webhooks): check each with `verifyWebhook` and the endpoint's secret.
 */
export class WebhooksResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Creates an endpoint; the answer's `secret` is shown only here: store it. Not retried after a
   * lost answer: the create takes no Idempotency-Key, so sending it again could make a second
   * endpoint (list the endpoints to find out).
   */
  create(params: CreateWebhookParams, options: CallOptions = {}): Promise<WebhookEndpointWithSecret> {
    return this.transport.request({ method: 'POST', path: WEBHOOKS, body: params, signal: options.signal, maxRetries: 0 });
  }

  list(params: ListWebhooksParams = {}, options: CallOptions = {}): Promise<WebhookEndpointList> {
    return this.transport.request({ method: 'GET', path: WEBHOOKS, query: params as Query, signal: options.signal });
  }

  /** Every endpoint of the caller, page after page. */
  listAll(params: Omit<ListWebhooksParams, 'after'> = {}, options: CallOptions = {}): AsyncGenerator<WebhookEndpoint> {
    return paginate((after) => this.list({ ...params, after, limit: params.limit ?? 100 }, options));
  }

  get(webhookId: string, options: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.transport.request({ method: 'GET', path: webhookPath(webhookId), signal: options.signal });
  }

  /** Changes the fields given (`enabled: true` re-enables an endpoint disabled by a 410 or by failures). Safe to repeat. */
  update(webhookId: string, params: UpdateWebhookParams, options: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.transport.request({ method: 'POST', path: webhookPath(webhookId), body: params, signal: options.signal });
  }

  /** Deletes the endpoint and its delivery log. A retry after a lost answer may find it gone already (404 `not_found`). */
  delete(webhookId: string, options: CallOptions = {}): Promise<WebhookEndpointDeleted> {
    return this.transport.request({ method: 'DELETE', path: webhookPath(webhookId), signal: options.signal });
  }

  /**
   * A new secret, in this answer only; for 24 hours deliveries are signed with both. Not retried
   * after a lost answer: a second rotation would make the lost secret the previous one and drop
   * the one your receiver holds.
   */
  rotateSecret(webhookId: string, options: CallOptions = {}): Promise<WebhookEndpointWithSecret> {
    return this.transport.request({ method: 'POST', path: webhookPath(webhookId, 'rotate-secret'), signal: options.signal, maxRetries: 0 });
  }

  /** Sends a `webhook.test` delivery now (one attempt, also to a disabled endpoint); the answer is the delivery, pending. Not retried. */
  test(webhookId: string, options: CallOptions = {}): Promise<WebhookDelivery> {
    return this.transport.request({ method: 'POST', path: webhookPath(webhookId, 'test'), signal: options.signal, maxRetries: 0 });
  }

  /** One page of the endpoint's delivery log, newest first, each delivery with its attempts. */
  deliveries(webhookId: string, params: ListWebhookDeliveriesParams = {}, options: CallOptions = {}): Promise<WebhookDeliveryList> {
    return this.transport.request({ method: 'GET', path: webhookPath(webhookId, 'deliveries'), query: params as Query, signal: options.signal });
  }

  /** Every delivery of the endpoint's log (optionally of one `status`), page after page. */
  allDeliveries(webhookId: string, params: Omit<ListWebhookDeliveriesParams, 'after'> = {}, options: CallOptions = {}): AsyncGenerator<WebhookDelivery> {
    return paginate((after) => this.deliveries(webhookId, { ...params, after, limit: params.limit ?? 100 }, options));
  }

  /**
   * Sends a delivery's event again (same payload, same `webhook-id`) as a new delivery, outside its
   * session's order; the answer is the new delivery, pending. Not retried: each call makes one.
   */
  redeliver(webhookId: string, deliveryId: string, options: CallOptions = {}): Promise<WebhookDelivery> {
    return this.transport.request({ method: 'POST', path: webhookPath(webhookId, 'deliveries', deliveryId, 'redeliver'), signal: options.signal, maxRetries: 0 });
  }
}
