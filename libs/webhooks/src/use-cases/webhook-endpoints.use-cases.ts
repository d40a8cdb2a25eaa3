import { lookup } from 'node:dns/promises';
import { Injectable } from '@nestjs/common';
import { AuditLog } from '#libs/audit';
import { AppConfig } from '#libs/config';
import { newId, unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import { WebhookJobs } from '#libs/queue';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { checkWebhookUrl } from '../delivery/address-policy.js';
import { generateWebhookSecret } from '../delivery/signature.js';
import {
  type CreateWebhookEndpointDto,
  MAX_WEBHOOK_ENDPOINTS,
  type UpdateWebhookEndpointDto,
  type WebhookDeliveryDto,
  type WebhookDeliveryListDto,
  type WebhookEndpointDeletedDto,
  type WebhookEndpointDto,
  type WebhookEndpointListDto,
  type WebhookEndpointWithSecretDto,
  WEBHOOK_URL_MAX,
} from '../webhook.dto.js';
import type { WebhookPayload } from '../webhook-events.js';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { type WebhookDeliveryRow, type WebhookEndpointRow, WebhooksRepository } from '../webhooks.repository.js';

/** Who acts on an endpoint: its owner (`ownerId`), and the caller as the audit trail names it. */
export interface WebhookActor {
  ownerId: string;
  actorId: string;
  keyId: string | null;
}

export function toEndpointDto(row: WebhookEndpointRow): WebhookEndpointDto {
  const previousLive = row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt.getTime() > Date.now();
  return {
    id: row.id,
    object: 'webhook_endpoint',
    url: row.url,
    event_types: row.eventTypes,
    description: row.description,
    enabled: row.enabled,
    disabled_reason: row.disabledReason,
    disabled_at: row.disabledAt ? unixSeconds(row.disabledAt) : null,
    failing_since: row.failingSince ? unixSeconds(row.failingSince) : null,
    previous_secret_expires_at: previousLive ? unixSeconds(row.previousSecretExpiresAt!) : null,
    created_at: unixSeconds(row.createdAt),
    updated_at: unixSeconds(row.updatedAt),
  };
}

export function toDeliveryDto(row: WebhookDeliveryRow): WebhookDeliveryDto {
  return {
    id: row.id,
    object: 'webhook_delivery',
    endpoint_id: row.endpointId,
    event_id: row.eventId,
    event_type: row.eventType,
    session_id: row.sessionId,
    status: row.status,
    attempt_count: row.attempts,
    next_attempt_at: row.status === 'pending' ? unixSeconds(row.nextAttemptAt) : null,
    redelivery_of: row.redeliveryOf,
    created_at: unixSeconds(row.createdAt),
    completed_at: row.completedAt ? unixSeconds(row.completedAt) : null,
    attempts: row.log.map((a) => ({
      attempt: a.attempt,
      started_at: unixSeconds(a.startedAt),
      duration_ms: a.durationMs,
      status_code: a.statusCode,
      outcome: a.outcome,
      response_excerpt: a.responseExcerpt,
      error: a.error,
    })),
  };
}

/** The URL rule (README "Webhooks"): https and public addresses after resolution, unless the deployment allows private networks. */
@Injectable()
export class WebhookUrlPolicy {
  constructor(private readonly config: AppConfig) {}

  async check(url: string): Promise<string> {
    const verdict = await checkWebhookUrl(url, this.config.webhookAllowPrivateNetworks, async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address));
    if (!verdict.ok) throw new DomainError('webhook_url_not_allowed', `The webhook URL is not allowed: ${verdict.reason}`);
    // Stored normalised (percent-encoded), which can be longer than what was sent.
    const normalised = verdict.url.toString();
    if (normalised.length > WEBHOOK_URL_MAX) throw DomainError.validation([{ field: 'url', errors: [`must be at most ${WEBHOOK_URL_MAX} characters once normalised (percent-encoded)`] }]);
    return normalised;
  }
}

/** A signing secret sealed for storage, with its clear value for the one answer that shows it. */
@Injectable()
export class WebhookSecrets {
  readonly box: WebhookSecretBox;

  constructor(config: AppConfig) {
    this.box = new WebhookSecretBox(config.secretsKey);
  }

  fresh(endpointId: string): { secret: string; sealed: Buffer } {
    const secret = generateWebhookSecret();
    return { secret, sealed: this.box.seal(secret, endpointId) };
  }
}

/** `POST /webhooks`: an endpoint of the caller; the answer shows its secret, once. */
@Injectable()
export class CreateWebhookEndpoint {
  constructor(
    private readonly endpoints: WebhooksRepository,
    private readonly urls: WebhookUrlPolicy,
    private readonly secrets: WebhookSecrets,
  ) {}

  async execute(actor: WebhookActor, dto: CreateWebhookEndpointDto): Promise<WebhookEndpointWithSecretDto> {
    const url = await this.urls.check(dto.url);
    const id = newId();
    const { secret, sealed } = this.secrets.fresh(id);
    const row = await this.endpoints.create(
      { id, ownerId: actor.ownerId, url, description: dto.description ?? '', eventTypes: dto.event_types ?? null, enabled: dto.enabled ?? true, secretSealed: sealed },
      MAX_WEBHOOK_ENDPOINTS,
    );
    if (!row) throw new DomainError('webhook_endpoint_limit', `At most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints per caller: delete one first`);
    return { ...toEndpointDto(row), secret };
  }
}

@Injectable()
export class ListWebhookEndpoints {
  constructor(private readonly endpoints: WebhooksRepository) {}

  async execute(actor: WebhookActor, page: { after?: string; limit: number; order: 'asc' | 'desc' }): Promise<WebhookEndpointListDto> {
    const { rows, hasMore } = await this.endpoints.list(actor.ownerId, page);
    const data = rows.map(toEndpointDto);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
  }
}

@Injectable()
export class GetWebhookEndpoint {
  constructor(private readonly endpoints: WebhooksRepository) {}

  async execute(actor: WebhookActor, id: string): Promise<WebhookEndpointDto> {
    return toEndpointDto(await this.endpoints.get(actor.ownerId, id));
  }
}

/** `POST /webhooks/{id}`: the fields given change; enabling sends what is still pending. */
@Injectable()
export class UpdateWebhookEndpoint {
  constructor(
    private readonly endpoints: WebhooksRepository,
    private readonly urls: WebhookUrlPolicy,
  ) {}

  // Deliveries an enable makes due go out with the next webhook sweep (WEBHOOK_SWEEP_MS).
  async execute(actor: WebhookActor, id: string, dto: UpdateWebhookEndpointDto): Promise<WebhookEndpointDto> {
    const before = await this.endpoints.get(actor.ownerId, id);
    const url = dto.url === undefined ? undefined : await this.urls.check(dto.url);
    const row = await this.endpoints.update(actor.ownerId, id, { url, description: dto.description, eventTypes: dto.event_types, enabled: dto.enabled }, !before.enabled && dto.enabled === true);
    return toEndpointDto(row);
  }
}

@Injectable()
export class DeleteWebhookEndpoint {
  constructor(private readonly endpoints: WebhooksRepository) {}

  async execute(actor: WebhookActor, id: string): Promise<WebhookEndpointDeletedDto> {
    await this.endpoints.delete(actor.ownerId, id);
    return { id, object: 'webhook_endpoint', deleted: true };
  }
}

/** `POST /webhooks/{id}/rotate-secret`: a new secret (shown once); the old one signs along for 24 h. */
@Injectable()
export class RotateWebhookSecret {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly endpoints: WebhooksRepository,
    private readonly secrets: WebhookSecrets,
    private readonly audit: AuditLog,
  ) {}

  async execute(actor: WebhookActor, id: string): Promise<WebhookEndpointWithSecretDto> {
    const { secret, sealed } = this.secrets.fresh(id);
    const row = await this.endpoints.rotate(actor.ownerId, id, sealed);
    await this.audit.record(this.dataSource.manager, { actorId: actor.actorId, keyId: actor.keyId, action: 'webhook_endpoint.secret_rotated', targetType: 'webhook_endpoint', targetId: id });
    return { ...toEndpointDto(row), secret };
  }
}

/** `POST /webhooks/{id}/test`: one `webhook.test` delivery, attempted at once, once. */
@Injectable()
export class SendWebhookTest {
  constructor(
    private readonly endpoints: WebhooksRepository,
    private readonly jobs: WebhookJobs,
  ) {}

  async execute(actor: WebhookActor, id: string): Promise<WebhookDeliveryDto> {
    const endpoint = await this.endpoints.get(actor.ownerId, id);
    const deliveryId = newId();
    const eventId = `evt_${newId().replaceAll('-', '')}`;
    const payload: WebhookPayload = { id: eventId, type: 'webhook.test', created_at: Math.floor(Date.now() / 1000), data: { endpoint_id: endpoint.id } };
    await this.endpoints.insertStandalone(null, { id: deliveryId, endpointId: endpoint.id, eventId, eventType: 'webhook.test', sessionId: null, payload: JSON.stringify(payload), redeliveryOf: null });
    await this.jobs.nudgeQuietly([{ endpointId: endpoint.id, chain: deliveryId }]);
    return toDeliveryDto((await this.endpoints.delivery(endpoint.id, deliveryId))!);
  }
}

@Injectable()
export class ListWebhookDeliveries {
  constructor(private readonly endpoints: WebhooksRepository) {}

  async execute(actor: WebhookActor, id: string, page: { after?: string; limit: number; status?: string }): Promise<WebhookDeliveryListDto> {
    const endpoint = await this.endpoints.get(actor.ownerId, id);
    const { rows, hasMore } = await this.endpoints.deliveries(endpoint.id, page);
    const data = rows.map(toDeliveryDto);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
  }
}

/** `POST /webhooks/{id}/deliveries/{delivery_id}/redeliver`: the same event (same `webhook-id`) once more, outside its session's order. */
@Injectable()
export class RedeliverWebhook {
  constructor(
    private readonly endpoints: WebhooksRepository,
    private readonly jobs: WebhookJobs,
  ) {}

  async execute(actor: WebhookActor, id: string, deliveryId: string): Promise<WebhookDeliveryDto> {
    const endpoint = await this.endpoints.get(actor.ownerId, id);
    const original = await this.endpoints.deliveryPayload(endpoint.id, deliveryId);
    if (!original) throw DomainError.notFound(`Webhook delivery ${deliveryId}`);
    const copyId = newId();
    await this.endpoints.insertStandalone(null, { id: copyId, endpointId: endpoint.id, ...original, redeliveryOf: deliveryId });
    await this.jobs.nudgeQuietly([{ endpointId: endpoint.id, chain: copyId }]);
    return toDeliveryDto((await this.endpoints.delivery(endpoint.id, copyId))!);
  }
}
