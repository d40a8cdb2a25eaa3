import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { assertFullAccess, CurrentPrincipal, type Principal } from '#libs/auth';
import { ListQueryDto } from '#libs/protocol';
import {
  CreateWebhookEndpoint,
  CreateWebhookEndpointDto,
  DeleteWebhookEndpoint,
  GetWebhookEndpoint,
  ListWebhookEndpoints,
  RotateWebhookSecret,
  UpdateWebhookEndpoint,
  UpdateWebhookEndpointDto,
  type WebhookActor,
  WebhookEndpointDeletedDto,
  WebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointWithSecretDto,
} from '#libs/webhooks';
import {
  CREATE_WEBHOOK_EXAMPLE,
  WEBHOOK_DELETED_EXAMPLE,
  WEBHOOK_EXAMPLE,
  WEBHOOK_LIST_EXAMPLE,
  WEBHOOK_WITH_SECRET_EXAMPLE,
} from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

export const ApiWebhookId = () =>
  ApiParam({ name: 'webhook_id', description: 'A webhook endpoint of the caller (another caller\'s answers 404).', schema: { type: 'string', format: 'uuid' } });

/**
 * Webhook endpoints; their deliveries are WebhookDeliveriesController's. Registered before
 * AgentsController (`/agents/webhooks` is no agent).
 */
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
}

/** Endpoints are the caller's own (like sessions), managed with full access only (as named secrets are). */
export function actorOf(principal: Principal): WebhookActor {
  assertFullAccess(principal);
  return { ownerId: principal.userId, actorId: principal.actorId, keyId: principal.keyId };
}
