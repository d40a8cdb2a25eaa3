import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiBearerAuth, ApiTags, ApiHeader } from '@nestjs/swagger';
import type { Response } from 'express';
import { assertAdmin, assertOperator, assertUserToken, assertViewer, CurrentPrincipal, type Principal } from '#libs/auth';
import {
  BULK_CANCEL_MAX,
  BulkCancelResultDto,
  BulkCancelSessions,
  BulkCancelSessionsDto,
  GetSessionTimeline,
  ListModelRequests,
  MODEL_REQUESTS_PAGE,
  ModelRequestListDto,
  ModelRequestsQueryDto,
  SessionTimelineDto,
} from '#libs/operations';
import { ListQueryDto } from '#libs/protocol';
import { BULK_CANCEL_EXAMPLES, BULK_CANCEL_RESULT_EXAMPLE, MODEL_REQUEST_LIST_EXAMPLE, SESSION_TIMELINE_EXAMPLE } from '../openapi/operator-examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { sendIdempotent } from './send-idempotent.js';

/** Turns a timeline page shows unless asked: each carries its runs and steps. */
const TIMELINE_PAGE = 10;

/**
 * The operator API on sessions of any owner: a session's timeline, a run's exact model
 * requests (administrators with a user token only) and bulk cancel.
 */
@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/sessions')
export class AdminSessionOperationsController {
  constructor(
    private readonly timeline: GetSessionTimeline,
    private readonly bulkCancel: BulkCancelSessions,
    private readonly modelRequests: ListModelRequests,
  ) {}

  @Post('bulk-cancel')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'bulkCancelSessions',
    summary: 'Cancel the active turns of the sessions matching a filter',
    description:
      `Selects the sessions of any owner that have an active turn not already being cancelled, narrowed by the filter, oldest first. \`dry_run: true\` only counts them (and shows the first ids). \`dry_run: false\` needs an Idempotency-Key and asks each selected session's active turn to cancel, as a cancel event would: a turn waiting at a waitpoint ends cancelled at once, a running one is stopped by its worker (\`cancellation_pending\` until then); each session in a transaction of its own, with an audit entry (\`session.cancel_requested\`) naming the caller. At most ${BULK_CANCEL_MAX} sessions per call: \`has_more\` says to call again (with a new key). A replay with the same key answers the first response. Operators and administrators (a viewer gets 403).`,
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description: 'Required when `dry_run` is false (1–128 characters): a retry with the same key and body answers the first response; the same key with another filter is 409 `idempotency_conflict`.',
    schema: { type: 'string', minLength: 1, maxLength: 128 },
  })
  @ApiBody({ type: BulkCancelSessionsDto, examples: BULK_CANCEL_EXAMPLES })
  @ApiOkResponse({ type: BulkCancelResultDto, description: 'The count (dry run) or what was cancelled.', example: BULK_CANCEL_RESULT_EXAMPLE })
  @ApiErrors('forbidden', 'validation_failed', 'invalid_json', 'idempotency_key_required', 'idempotency_conflict', 'rate_limited')
  async bulk(
    @CurrentPrincipal() principal: Principal,
    @Body() body: BulkCancelSessionsDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    assertOperator(principal);
    if (body.dry_run) {
      res.status(200).json(await this.bulkCancel.dryRun(body.filter));
      return;
    }
    sendIdempotent(res, await this.bulkCancel.execute(principal, body.filter, key));
  }

  @Get(':session_id/timeline')
  @ApiOperation({
    operationId: 'getSessionTimeline',
    summary: 'Read a session\'s timeline (any owner)',
    description:
      'One page of the session\'s turns (newest first by default; `after` is the last turn id of the previous page), each with its runs (status, model, lease and fencing epoch, takeovers: `interrupted` and `resume_from_run_id`, usage, times) and each run\'s committed steps: model calls (model, tokens, duration), tool calls (arguments, result, duration, approval decision), waitpoint resolutions (answers, decisions) and compactions; plus the members the session spawned. Long texts are cut to 4000 characters (`truncated`). The exact model requests are never in it: where the deployment records them (`model_requests: recorded`, MODEL_REQUEST_AUDIT=on) an administrator with a user token reads them per run (`listModelRequests`). A deleted session is 404. Viewers, operators and administrators.',
  })
  @ApiParam({ name: 'session_id', description: 'A session of any owner.', schema: { type: 'string', format: 'uuid' } })
  @ApiOkResponse({ type: SessionTimelineDto, description: 'One page of the timeline.', example: SESSION_TIMELINE_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'invalid_cursor', 'validation_failed', 'rate_limited')
  get(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ListQueryDto): Promise<SessionTimelineDto> {
    assertViewer(principal);
    return this.timeline.execute(sessionId, { after: query.after, limit: query.limit ?? TIMELINE_PAGE, order: query.order ?? 'desc' });
  }

  @Get(':session_id/runs/:run_id/model-requests')
  @ApiOperation({
    operationId: 'listModelRequests',
    summary: 'Read the exact model requests of a run (administrators, user tokens only)',
    description:
      `The full audit of a run (an administrator signed in with a user token only): for each model call of the run, in step order (oldest first by default; \`after\` is the \`last_id\` of the previous page, default ${MODEL_REQUESTS_PAGE} a page), the exact request the worker sent, recorded in the transaction that committed the call's \`model_call\` step (\`step_id\`, the step's id on the timeline). \`openai:\` models: the Chat Completions request body (model, messages with the instructions as the system message, tools, stream options); \`scripted:\` models: the messages and tools they were given. Never headers or API keys. Recorded only while the deployment sets MODEL_REQUEST_AUDIT=on (the timeline's \`model_requests\` says \`recorded\`); a run without recorded calls lists none. A run taken over or retried records each committed call once. Only an administrator signed in with a user token (JWT): every API key gets 403 \`user_token_required\`, a user token without the \`admin\` role 403 \`forbidden\`. Each page read is audited (\`session.model_requests_read\`, naming the reader, the run and the steps shown) before it is answered. An unknown or deleted session, or a run that is not the session's, is 404.`,
  })
  @ApiParam({ name: 'session_id', description: 'A session of any owner.', schema: { type: 'string', format: 'uuid' } })
  @ApiParam({ name: 'run_id', description: 'A run of that session (a timeline run\'s `id`).', schema: { type: 'string', format: 'uuid' } })
  @ApiOkResponse({ type: ModelRequestListDto, description: 'One page of the run\'s recorded model requests.', example: MODEL_REQUEST_LIST_EXAMPLE })
  @ApiErrors('user_token_required', 'forbidden', 'not_found', 'invalid_cursor', 'validation_failed', 'rate_limited')
  listModelRequests(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Param('run_id') runId: string,
    @Query() query: ModelRequestsQueryDto,
  ): Promise<ModelRequestListDto> {
    assertUserToken(principal);
    assertAdmin(principal);
    return this.modelRequests.execute(principal, sessionId, runId, { after: query.after, limit: query.limit ?? MODEL_REQUESTS_PAGE, order: query.order ?? 'asc' });
  }
}
