import { Body, Controller, Get, Headers, Param, Post, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, ApiHeader, ApiOperation, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { decodeCursor, isRetiredCursor, type StreamPosition } from '#libs/events';
import { ReceiptDto, SessionQueriesService, SubmitEvent, SubmitEventsDto } from '#libs/protocol';
import { MESSAGE_RECEIPT_EXAMPLE, SUBMIT_EVENT_EXAMPLES } from '../openapi/examples.js';
import { SSE_FRAMING, sseContent } from '../openapi/session-events.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { ApiIdempotencyKey, ApiSessionId } from './api-params.js';
import { sendIdempotent } from './send-idempotent.js';
import { SseResponder } from './sse-responder.js';

@ApiTags(TAGS.events.name)
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
    operationId: 'submitEvent',
    summary: 'Submit one input or control event',
    description:
      'Exactly one event per request: a message (`agent.session.input.message`, queued FIFO as a follow-up or run ahead as a steer), a cancel, an input cancel, a promote, a queue continue, a waitpoint answer or approval (`yuxi.session.input.resume`), a client tool result (`tool_result`, or `agent.session.input.tool_result` as the official OpenAI SDK sends it), an approval of the upstream form (`agent.session.input.mcp_approval_request_result`, by the `request_id` the session\'s `required_actions` show), a compaction request, or a cooperation tree\'s stop or continue (`yuxi.session.tree.stop` / `.continue`, sent to any session of the tree). The 202 receipt proves durable acceptance only: the outcome is observed on the event stream or read from the input and its turn. A message may attach uploaded drafts with `yuxi.attachment_file_ids` (404: unknown file, 409 `file_already_bound`; nothing is stored then); the input then waits with `attachment_status: preparing` until a worker has put the files in the session workdir.',
  })
  @ApiSessionId()
  @ApiIdempotencyKey('msg-0001')
  @ApiBody({ type: SubmitEventsDto, examples: SUBMIT_EVENT_EXAMPLES })
  @ApiAcceptedResponse({ type: ReceiptDto, description: 'Durably accepted (or the replay of the first acceptance under this key).', example: MESSAGE_RECEIPT_EXAMPLE })
  @ApiErrors(
    'validation_failed',
    'invalid_json',
    'idempotency_key_required',
    'unknown_event_type',
    'not_implemented',
    'invalid_model',
    'model_not_allowed',
    'tool_approval_pinned',
    'not_found',
    'idempotency_conflict',
    'state_conflict',
    'budget_exceeded',
    'file_already_bound',
    'payload_too_large',
    'too_many_large_bodies',
    'file_quota_exceeded',
    'session_image_quota_exceeded',
    'storage_quota_exceeded',
    'input_text_too_large',
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
    operationId: 'streamSessionEvents',
    summary: 'Subscribe to the session event stream (SSE)',
    description:
      'A long-lived text/event-stream across turns; each message\'s `data:` is a `SessionEvent` (see its schema, one member per event type). Without Last-Event-ID the stream starts with the retained replay window, preceded by `yuxi.session.resync` when that window no longer starts at the session\'s first event (trimmed, or expired altogether); with it, strictly after that cursor. Events missed on the way (an expired cursor, a Redis outage) are announced with `yuxi.session.resync`, never skipped silently. 503 `service_unavailable` (retryable) before the stream starts while Redis is unreachable.',
  })
  @ApiSessionId()
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'The `id:` of the last event processed: resume strictly after it (empty: from the replay window). One cursor format: a cursor of the earlier format (before events carried `yuxi.seq`) is refused with 400 `last_event_id_retired`, which says how to resume.', schema: { type: 'string' } })
  @ApiProduces('text/event-stream')
  @ApiResponse({
    status: 200,
    description: `The session event stream across turns; it stays open until the client closes it. ${SSE_FRAMING}`,
    content: sseContent(),
  })
  @ApiErrors('not_found', 'last_event_id_retired', 'invalid_last_event_id', 'service_unavailable')
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
      if (after === null && isRetiredCursor(sessionId, lastEventId)) {
        throw new DomainError(
          'last_event_id_retired',
          'Last-Event-ID is a cursor of an earlier stream format (before events carried yuxi.seq) and cannot be resumed from: reconnect without Last-Event-ID (the retained window is replayed; skip events whose event_id you already applied) or re-read the turn and its items, then resume from the id: of the events you receive',
        );
      }
      if (after === null) throw new DomainError('invalid_last_event_id', 'Last-Event-ID is not a cursor of this session stream');
    }

    await this.sse.stream(principal, req, res, sessionId, after);
  }
}
