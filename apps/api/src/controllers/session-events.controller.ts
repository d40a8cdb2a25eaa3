import { Body, Controller, Get, Headers, Param, Post, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, ApiHeader, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { decodeCursor, EVENT_TYPES, type StreamPosition } from '#libs/events';
import { ReceiptDto, SessionQueriesService, SubmitEvent, SubmitEventsDto } from '#libs/protocol';
import { ApiErrors } from './api-errors.decorator.js';
import { sendIdempotent } from './send-idempotent.js';
import { SseResponder } from './sse-responder.js';

@ApiTags('agents-public-v1')
@ApiBearerAuth()
@Controller('api/v1/agents/sessions/:session_id/events')
export class SessionEventsController {
  constructor(
    private readonly submitEvent: SubmitEvent,
    private readonly queries: SessionQueriesService,
    private readonly sse: SseResponder,
  ) {}

  @Post()
  @ApiOperation({
    summary: 'Submit one input or control event',
    description:
      'Exactly one event per request. `agent.session.input.message` queues a follow-up (FIFO); the receipt proves durable acceptance only. A message may attach uploaded drafts with `yuxi.attachment_file_ids` (404: unknown file, 409 `file_already_bound`; nothing is stored then); the input then waits with `attachment_status: preparing` until a worker has put the files in the session workdir.',
  })
  @ApiHeader({ name: 'Idempotency-Key', required: true, schema: { type: 'string', minLength: 1, maxLength: 128 }, description: '1–128 characters; retries with the same intent return the first receipt.' })
  @ApiBody({ type: SubmitEventsDto })
  @ApiAcceptedResponse({ type: ReceiptDto })
  @ApiErrors(
    'validation_failed',
    'invalid_json',
    'idempotency_key_required',
    'unknown_event_type',
    'not_implemented',
    'invalid_model',
    'not_found',
    'idempotency_conflict',
    'state_conflict',
    'file_already_bound',
    'payload_too_large',
  )
  async submit(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Body() body: SubmitEventsDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    sendIdempotent(res, await this.submitEvent.execute(principal, sessionId, body.events, key));
  }

  @Get()
  @ApiOperation({
    summary: 'Subscribe to the session event stream (SSE)',
    description: `A long-lived text/event-stream across turns. Send Last-Event-ID to resume strictly after a cursor; events missed on the way (an expired cursor, a Redis outage) are announced with yuxi.session.resync, never skipped silently. 503 service_unavailable (retryable) before the stream starts while Redis is unreachable. Event types: ${Object.keys(EVENT_TYPES).join(', ')}.`,
  })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'The `id:` of the last event processed.' })
  @ApiProduces('text/event-stream')
  @ApiResponse({
    status: 200,
    description: 'SSE messages: `id:` opaque cursor, `event:` type, `data:` event JSON with a stable event_id.',
    content: {
      'text/event-stream': {
        schema: {
          type: 'object',
          required: ['type', 'event_id', 'session_id', 'created_at'],
          properties: {
            type: { $ref: '#/components/schemas/SessionEventType' },
            event_id: { type: 'string' },
            session_id: { type: 'string' },
            created_at: { type: 'integer' },
            turn_id: { type: 'string' },
            yuxi: {
              type: 'object',
              properties: {
                seq: {
                  type: 'integer',
                  description:
                    'Durable events: 1, 2, 3… per session without gaps. Absent on live events (output_text.delta, and the item.added / content_part.added announcing an assistant message). A jump means events were missed; the server sends yuxi.session.resync first.',
                },
                run_id: { type: 'string', description: 'The run (execution segment) the event belongs to.' },
              },
              additionalProperties: true,
            },
          },
          additionalProperties: true,
        },
      },
    },
  })
  @ApiErrors('not_found', 'invalid_last_event_id', 'service_unavailable')
  async stream(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    await this.queries.assertVisible(principal, sessionId);
    let after: StreamPosition | null = null;
    if (lastEventId !== undefined && lastEventId !== '') {
      after = decodeCursor(sessionId, lastEventId);
      if (after === null) throw new DomainError('invalid_last_event_id', 'Last-Event-ID is not a cursor of this session stream');
    }

    await this.sse.stream(principal, req, res, sessionId, after);
  }
}
