import { Body, Controller, Get, Headers, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { AdminSessionDto, AdminSessionListDto, AdminSessionListQueryDto, OperatorSessionQueries, ReceiptDto, SubmitEventsDto, SubmitOperatorEvent } from '#libs/protocol';
import { ADMIN_SESSION_EXAMPLE, ADMIN_SESSION_LIST_EXAMPLE, OPERATOR_EVENT_EXAMPLES, RECEIPT_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { ApiIdempotencyKey } from './api-params.js';
import { sendIdempotent } from './send-idempotent.js';

const ApiAnySessionId = () => ApiParam({ name: 'session_id', description: 'A session of any owner (a deleted one answers 404).', schema: { type: 'string', format: 'uuid' } });

/**
 * The operator API over every owner's sessions: viewers, operators and administrators read them,
 * operators and administrators send control events to them. The public routes stay owner-scoped
 * for every role: another owner's session is reached only here.
 */
@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/sessions')
export class AdminSessionsController {
  constructor(
    private readonly queries: OperatorSessionQueries,
    private readonly submitOperatorEvent: SubmitOperatorEvent,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listAdminSessions',
    summary: 'Search every owner\'s sessions',
    description:
      'Sessions of every owner (roots and cooperation members; deleted ones never), newest first by default, in cursor pages like every list: pass the previous page\'s `last_id` as `after`. Every filter narrows. Each session is the session resource with its owner (`yuxi.owner_id`, `yuxi.owner`). For viewers, operators and administrators (403 `forbidden` otherwise).',
  })
  @ApiOkResponse({ type: AdminSessionListDto, description: 'One page of sessions.', example: ADMIN_SESSION_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'invalid_cursor', 'validation_failed', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: AdminSessionListQueryDto): Promise<AdminSessionListDto> {
    return this.queries.list(
      principal,
      {
        status: query.status,
        agentId: query.agent_id,
        ownerId: query.owner_id,
        appId: query.app_id,
        endUserId: query.end_user_id,
        waiting: query.waiting === undefined ? undefined : query.waiting === 'true',
        errorCode: query.error_code,
        createdAfter: query.created_after,
        createdBefore: query.created_before,
        q: query.q,
      },
      { after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' },
    );
  }

  @Get(':session_id')
  @ApiOperation({
    operationId: 'getAdminSession',
    summary: 'Get any owner\'s session',
    description: 'The session resource with its owner. For viewers, operators and administrators (403 `forbidden` otherwise); 404 for an unknown or deleted session.',
  })
  @ApiAnySessionId()
  @ApiOkResponse({ type: AdminSessionDto, description: 'The session.', example: ADMIN_SESSION_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  get(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<AdminSessionDto> {
    return this.queries.get(principal, sessionId);
  }

  @Post(':session_id/events')
  @ApiOperation({
    operationId: 'submitAdminSessionEvent',
    summary: 'Send a control event to any owner\'s session',
    description:
      'One control event, as `POST /api/v1/agents/sessions/{session_id}/events` takes it and with the same rules and receipts: a cancel (`agent.session.input.cancel`), a waitpoint answer or approval (`yuxi.session.input.resume`), a client tool result (`tool_result`), a queue continue (`yuxi.session.input.continue`), or a tree\'s stop or continue (`yuxi.session.tree.stop` / `.continue`). Messages and other inputs are refused (422 `control_event_required`): an operator never speaks for the owner. Each accepted event is in the audit trail (`session.operator_event`, naming the operator), written in the transaction that accepts it. The Idempotency-Key is the operator\'s own (it never meets the owner\'s keys). For operators and administrators (403 `forbidden` otherwise, viewers included).',
  })
  @ApiAnySessionId()
  @ApiIdempotencyKey('op-0001')
  @ApiBody({ type: SubmitEventsDto, examples: OPERATOR_EVENT_EXAMPLES })
  @ApiAcceptedResponse({ type: ReceiptDto, description: 'Durably accepted (or the replay of the first acceptance under this key).', example: RECEIPT_EXAMPLE })
  @ApiErrors(
    'forbidden',
    'validation_failed',
    'invalid_json',
    'idempotency_key_required',
    'control_event_required',
    'unknown_event_type',
    'waitpoint_incomplete',
    'not_found',
    'idempotency_conflict',
    'state_conflict',
    'waitpoint_stale',
    'budget_exceeded',
    'payload_too_large',
    'input_text_too_large',
    'rate_limited',
  )
  async submit(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Body() body: SubmitEventsDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    sendIdempotent(res, await this.submitOperatorEvent.execute(principal, sessionId, body.events, key));
  }
}
