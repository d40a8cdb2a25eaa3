import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { assertFullAccess, CurrentPrincipal, type Principal } from '#libs/auth';
import { ListQueryDto } from '#libs/protocol';
import {
  CreateWebhookEndpoint,
  CreateWebhookEndpointDto,
  DeleteWebhookEndpoint,
  GetWebhookEndpoint,
  ListWebhookDeliveries,
  ListWebhookEndpoints,
  RedeliverWebhook,
  RotateWebhookSecret,
  SendWebhookTest,
  UpdateWebhookEndpoint,
  UpdateWebhookEndpointDto,
  type WebhookActor,
  WebhookDeliveryDto,
  WebhookDeliveryListDto,
  WebhookDeliveryListQueryDto,
  WebhookEndpointDeletedDto,
  WebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointWithSecretDto,
} from '#libs/webhooks';
import {
  CREATE_WEBHOOK_EXAMPLE,
  WEBHOOK_DELETED_EXAMPLE,
  WEBHOOK_DELIVERY_EXAMPLE,
  WEBHOOK_DELIVERY_LIST_EXAMPLE,
  WEBHOOK_EXAMPLE,
  WEBHOOK_LIST_EXAMPLE,
  WEBHOOK_WITH_SECRET_EXAMPLE,
} from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const ApiWebhookId = () =>
  ApiParam({ name: 'webhook_id', description: 'A webhook endpoint of the caller (another caller\'s answers 404).', schema: { type: 'string', format: 'uuid' } });

/** Webhook endpoints and their delivery log. Registered before AgentsController (`/agents/webhooks` is no agent). */
@ApiTags(TAGS.webhooks.name)
@ApiBearerAuth()
@Controller('api/v1/agents/webhooks')
export class WebhooksController {
  constructor(
    private readonly createEndpoint: CreateWebhookEndpoint,
    private readonly listEndpoints: ListWebhookEndpoints,
    private readonly getEndpoint: GetWebhookEndpoint,
    private readonly updateEndpoint: UpdateWebhookEndpoint,
    private readonly deleteEndpoint: DeleteWebhookEndpoint,
    private readonly rotateSecret: RotateWebhookSecret,
    private readonly sendTest: SendWebhookTest,
    private readonly listDeliveries: ListWebhookDeliveries,
    private readonly redeliverOne: RedeliverWebhook,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'createWebhookEndpoint',
    summary: 'Create a webhook endpoint',
    description:
      'An endpoint of the caller (at most 20). Events of the caller\'s sessions of the chosen types are POSTed to it, signed (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`), at least once: dedup on `webhook-id`. The answer holds the signing `secret`, the only time it is shown. Full access only.',
  })
  @ApiBody({ type: CreateWebhookEndpointDto, examples: { endpoint: { value: CREATE_WEBHOOK_EXAMPLE } } })
  @ApiCreatedResponse({ type: WebhookEndpointWithSecretDto, description: 'The endpoint, with its secret (shown once).', example: WEBHOOK_WITH_SECRET_EXAMPLE })
  @ApiErrors('forbidden', 'validation_failed', 'invalid_json', 'webhook_url_not_allowed', 'webhook_endpoint_limit', 'rate_limited')
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateWebhookEndpointDto): Promise<WebhookEndpointWithSecretDto> {
    return this.createEndpoint.execute(actorOf(principal), body);
  }

  @Get()
  @ApiOperation({ operationId: 'listWebhookEndpoints', summary: 'List webhook endpoints', description: 'The caller\'s endpoints in a stable (created_at, id) order, newest first by default. Secrets are never listed.' })
  @ApiOkResponse({ type: WebhookEndpointListDto, description: 'One page of endpoints.', example: WEBHOOK_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'validation_failed', 'invalid_cursor', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: ListQueryDto): Promise<WebhookEndpointListDto> {
    return this.listEndpoints.execute(actorOf(principal), { after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }

  @Get(':webhook_id')
  @ApiOperation({ operationId: 'getWebhookEndpoint', summary: 'Get a webhook endpoint', description: 'One endpoint of the caller; a disabled one says why (`disabled_reason`, `disabled_at`).' })
  @ApiWebhookId()
  @ApiOkResponse({ type: WebhookEndpointDto, description: 'The endpoint.', example: WEBHOOK_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  get(@CurrentPrincipal() principal: Principal, @Param('webhook_id') id: string): Promise<WebhookEndpointDto> {
    return this.getEndpoint.execute(actorOf(principal), id);
  }

  @Post(':webhook_id')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'updateWebhookEndpoint',
    summary: 'Update a webhook endpoint',
    description: 'Changes the fields given: `url`, `event_types`, `description`, `enabled` (re-enable an endpoint disabled by a 410 or by failures; its pending deliveries then go out, in order).',
  })
  @ApiWebhookId()
  @ApiBody({ type: UpdateWebhookEndpointDto, examples: { disable: { value: { enabled: false } }, enable: { value: { enabled: true } } } })
  @ApiOkResponse({ type: WebhookEndpointDto, description: 'The endpoint as updated.', example: WEBHOOK_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'invalid_json', 'webhook_url_not_allowed', 'rate_limited')
  update(@CurrentPrincipal() principal: Principal, @Param('webhook_id') id: string, @Body() body: UpdateWebhookEndpointDto): Promise<WebhookEndpointDto> {
    return this.updateEndpoint.execute(actorOf(principal), id, body);
  }

  @Delete(':webhook_id')
  @ApiOperation({ operationId: 'deleteWebhookEndpoint', summary: 'Delete a webhook endpoint', description: 'The endpoint and its delivery log are gone; nothing more is sent to it (an attempt already under way finishes).' })
  @ApiWebhookId()
  @ApiOkResponse({ type: WebhookEndpointDeletedDto, description: 'Deleted.', example: WEBHOOK_DELETED_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  delete(@CurrentPrincipal() principal: Principal, @Param('webhook_id') id: string): Promise<WebhookEndpointDeletedDto> {
    return this.deleteEndpoint.execute(actorOf(principal), id);
  }

  @Post(':webhook_id/rotate-secret')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate a webhook endpoint\'s secret',
    description:
      'A new signing secret, shown in this answer only. For 24 hours deliveries carry two signatures (`webhook-signature: v1,<new> v1,<old>`), so a receiver can switch secrets without refusing any; then only the new one signs. Audited (`webhook_endpoint.secret_rotated`).',
  })
  @ApiWebhookId()
  @ApiOkResponse({ type: WebhookEndpointWithSecretDto, description: 'The endpoint, with its new secret (shown once).', example: WEBHOOK_WITH_SECRET_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  rotate(@CurrentPrincipal() principal: Principal, @Param('webhook_id') id: string): Promise<WebhookEndpointWithSecretDto> {
    return this.rotateSecret.execute(actorOf(principal), id);
  }

  @Post(':webhook_id/test')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'testWebhookEndpoint',
    summary: 'Send a test event',
    description: 'A `webhook.test` delivery, attempted at once and only once (also to a disabled endpoint); its outcome is in the delivery log. It changes nothing about the endpoint\'s health.',
  })
  @ApiWebhookId()
  @ApiAcceptedResponse({ type: WebhookDeliveryDto, description: 'The delivery, pending.', example: { ...WEBHOOK_DELIVERY_EXAMPLE, event_type: 'webhook.test', session_id: null, status: 'pending', attempt_count: 0, attempts: [], next_attempt_at: WEBHOOK_DELIVERY_EXAMPLE.created_at, completed_at: null } })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  test(@CurrentPrincipal() principal: Principal, @Param('webhook_id') id: string): Promise<WebhookDeliveryDto> {
    return this.sendTest.execute(actorOf(principal), id);
  }

  @Get(':webhook_id/deliveries')
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: 'List an endpoint\'s deliveries',
    description: 'The delivery log, newest first: each delivery with every attempt (start, duration, HTTP status, outcome, the first 1,024 characters of the response). Finished deliveries are kept for WEBHOOK_RETENTION_S (30 days by default).',
  })
  @ApiWebhookId()
  @ApiOkResponse({ type: WebhookDeliveryListDto, description: 'One page of deliveries.', example: WEBHOOK_DELIVERY_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'invalid_cursor', 'rate_limited')
  deliveries(@CurrentPrincipal() principal: Principal, @Param('webhook_id') id: string, @Query() query: WebhookDeliveryListQueryDto): Promise<WebhookDeliveryListDto> {
    return this.listDeliveries.execute(actorOf(principal), id, { after: query.after, limit: query.limit ?? 20, status: query.status });
  }

  @Post(':webhook_id/deliveries/:delivery_id/redeliver')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'redeliverWebhook',
    summary: 'Redeliver one delivery',
    description: 'The same event (same payload, same `webhook-id`) as a new delivery, attempted now with the retry schedule (once the endpoint is enabled again, for a disabled one), outside its session\'s order. The new delivery names the original in `redelivery_of`.',
  })
  @ApiWebhookId()
  @ApiParam({ name: 'delivery_id', description: 'A delivery of this endpoint.', schema: { type: 'string', format: 'uuid' } })
  @ApiAcceptedResponse({ type: WebhookDeliveryDto, description: 'The new delivery, pending.', example: { ...WEBHOOK_DELIVERY_EXAMPLE, status: 'pending', attempt_count: 0, attempts: [], completed_at: null, next_attempt_at: WEBHOOK_DELIVERY_EXAMPLE.created_at } })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  redeliver(@CurrentPrincipal() principal: Principal, @Param('webhook_id') id: string, @Param('delivery_id') deliveryId: string): Promise<WebhookDeliveryDto> {
    return this.redeliverOne.execute(actorOf(principal), id, deliveryId);
  }
}

/** Endpoints are the caller's own (like sessions), managed with full access only (as named secrets are). */
function actorOf(principal: Principal): WebhookActor {
  assertFullAccess(principal);
  return { ownerId: principal.userId, actorId: principal.actorId, keyId: principal.keyId };
}
