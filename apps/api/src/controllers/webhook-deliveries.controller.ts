import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { ListWebhookDeliveries, RedeliverWebhook, SendWebhookTest, WebhookDeliveryDto, WebhookDeliveryListDto, WebhookDeliveryListQueryDto } from '#libs/webhooks';
import { WEBHOOK_DELIVERY_EXAMPLE, WEBHOOK_DELIVERY_LIST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { actorOf, ApiWebhookId } from './webhooks.controller.js';

/**
 * The deliveries of a webhook endpoint: a test event, the delivery log, a redelivery. Registered
 * right after WebhooksController, so the document lists these routes after the endpoint's own.
 */
@ApiTags(TAGS.webhooks.name)
@ApiBearerAuth()
@Controller('api/v1/agents/webhooks')
export class WebhookDeliveriesController {
  constructor(
    private readonly sendTest: SendWebhookTest,
    private readonly listDeliveries: ListWebhookDeliveries,
    private readonly redeliverOne: RedeliverWebhook,
  ) {}

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
