import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import {
  CreateSessionDto,
  InputDetailDto,
  ListQueryDto,
  QueueDto,
  ReceiptDto,
  ReceiptQueryDto,
  SessionDeletedDto,
  SessionDto,
  SessionListDto,
  SessionListQueryDto,
  SessionBudgetReads,
  SessionQueriesService,
  SessionStateDto,
  ArchiveSession,
  CreateSession,
  DeleteSession,
  parseIfMatch,
  UpdateSession,
  UpdateSessionDto,
} from '#libs/protocol';
import { ItemListDto, RunDto, TurnDetailDto, TurnListDto } from '#libs/engine';
import {
  CREATED_SESSION_EXAMPLE,
  INPUT_DETAIL_EXAMPLE,
  ITEM_LIST_EXAMPLE,
  QUEUE_EXAMPLE,
  RECEIPT_EXAMPLE,
  RUN_EXAMPLE,
  SESSION_EXAMPLE,
  SESSION_LIST_EXAMPLE,
  STATE_EXAMPLE,
  TURN_DETAIL_EXAMPLE,
  TURN_LIST_EXAMPLE,
  UPDATE_SESSION_EXAMPLE,
} from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { ApiIdempotencyKey, ApiIfMatch, ApiInputId, ApiRunId, ApiSessionId, ApiTurnId } from './api-params.js';
import { sendIdempotent } from './send-idempotent.js';
import { SseResponder } from './sse-responder.js';


function page(query: ListQueryDto, defaultLimit: number) {
  return { after: query.after, limit: query.limit ?? defaultLimit, order: query.order ?? 'desc' } as const;
}

@ApiBearerAuth()
@Controller('api/v1/agents/sessions')
export class SessionsController {
  constructor(
    private readonly createSession: CreateSession,
    private readonly updateSession: UpdateSession,
    private readonly archiveSession: ArchiveSession,
    private readonly deleteSession: DeleteSession,
    private readonly queries: SessionQueriesService,
    private readonly sse: SseResponder,
    private readonly budgets: SessionBudgetReads,
  ) {}

  @Post()
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({
    operationId: 'createSession',
    summary: 'Create a session, empty or with its first input',
    description:
      'The session, its first input, the input\'s receipt and the binding of `yuxi.attachment_file_ids` commit in one transaction before the response (an unknown file is 404, an attached one 409 `file_already_bound`; nothing is stored then); the turn runs afterwards (watch it on the event stream). With attachments the input waits with `attachment_status: preparing` until a worker has put the files in the session workdir. With `stream: true` (and an input) the response is the session event stream instead of JSON. An `environment` (or the agent\'s default one) is checked and stored with the session: 422 naming the field for what this deployment does not take, `environment_unavailable` where it hosts none, `environment_loosened` where the session asks for more than its agent\'s default allows, 404 for a file of `environment.files` that is not the caller\'s.',
  })
  @ApiIdempotencyKey('create-0001')
  // A sample that succeeds as is in Swagger's Try it out (no stream: true, no placeholder file ids).
  @ApiBody({ type: CreateSessionDto, examples: { 'with input': { value: { agent_id: 'default-chatbot', title: 'Quarterly report', input: 'Hello!' } }, empty: { value: { agent_id: 'default-chatbot' } } } })
  @ApiCreatedResponse({
    type: SessionDto,
    example: CREATED_SESSION_EXAMPLE,
    description:
      'The session; `yuxi.receipt` holds the acceptance of the initial input. With `stream: true` the answer is the session event stream (text/event-stream), starting with `agent.session.created` whose `session` is this resource.',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiErrors('validation_failed', 'invalid_json', 'idempotency_key_required', 'invalid_model', 'model_not_allowed', 'tool_approval_pinned', 'environment_unavailable', 'environment_loosened', 'not_found', 'idempotency_conflict', 'file_already_bound', 'payload_too_large', 'too_many_large_bodies', 'file_quota_exceeded', 'session_image_quota_exceeded', 'storage_quota_exceeded', 'input_text_too_large')
  async create(
    @CurrentPrincipal() principal: Principal,
    @Body() body: CreateSessionDto,
    @Headers('idempotency-key') key: string | undefined,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    const result = await this.createSession.execute(principal, body, key);
    if (body.stream === true && result.sessionId) {
      try {
        return await this.sse.stream(principal, req, res, result.sessionId, null, result.status);
      } catch (error) {
        // The session and its input are committed: a caller over its stream cap (or with the stream
        // unavailable) gets the 201 receipt rather than an error that invites a retry.
        if (res.headersSent || !(error instanceof DomainError)) throw error;
        res.removeHeader('Retry-After');
      }
    }
    sendIdempotent(res, result);
  }

  @Get()
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({
    operationId: 'listSessions',
    summary: 'List sessions',
    description:
      'The caller\'s root sessions (or, with `root_session_id`, one cooperation tree: its root and members; with `forked_from`, the forks of one session) in a stable (created_at, id) order, newest first by default; pass the previous page\'s `last_id` as `after` for the next one.',
  })
  @ApiQuery({
    name: 'metadata',
    required: false,
    style: 'deepObject',
    explode: true,
    description: 'Only sessions whose `yuxi.metadata` holds every given pair: `metadata[channel]=web&metadata[locale]=en` (at most 16 pairs, as metadata itself).',
    schema: { type: 'object', additionalProperties: { type: 'string', maxLength: 512 }, maxProperties: 16 },
  })
  @ApiOkResponse({ type: SessionListDto, description: 'One page of sessions.', example: SESSION_LIST_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_cursor')
  async list(@CurrentPrincipal() principal: Principal, @Query() query: SessionListQueryDto): Promise<SessionListDto> {
    const list = await this.queries.listSessions(
      principal,
      {
        agentId: query.agent_id,
        rootSessionId: query.root_session_id,
        // The list shows active sessions: the archive only on request.
        archived: query.archived === 'true',
        isPinned: query.is_pinned === undefined ? undefined : query.is_pinned === 'true',
        metadata: query.metadata,
        forkedFrom: query.forked_from,
      },
      page(query, 50),
    );
    await this.budgets.show(list.data, false);
    return list;
  }

  @Get(':session_id')
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({ operationId: 'getSession', summary: 'Get a session', description: 'The session resource, with the overview of its latest turn (`yuxi.current_turn`) and of its queue.' })
  @ApiSessionId()
  @ApiOkResponse({ type: SessionDto, description: 'The session.', example: SESSION_EXAMPLE })
  @ApiErrors('not_found')
  // No ETag: the representation changes with every turn while the revision counts updates only, so
  // an ETag of the revision would let a cache revalidate a stale status (a 304 to If-None-Match).
  async get(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionDto> {
    const [session] = await this.budgets.show([await this.queries.getSession(principal, sessionId)], true);
    return session!;
  }

  @Post(':session_id')
  @HttpCode(200)
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({
    operationId: 'updateSession',
    summary: 'Update title, pin, read state and the defaults for later inputs',
    description:
      'Every field may be omitted; an explicit null is 422. `agent.model` and `tool_approval_mode` affect only inputs received afterwards; presentation changes do not move `last_active_at`. `yuxi.metadata` replaces the whole map. A change adds one to `yuxi.revision`; with `If-Match` it applies only at that revision (412 `revision_mismatch` otherwise, compared in the same write, so of two writers holding one revision only the first succeeds).',
  })
  @ApiSessionId()
  @ApiIfMatch()
  @ApiBody({ type: UpdateSessionDto, examples: { rename: { summary: 'Rename, pin, mark read and label', value: UPDATE_SESSION_EXAMPLE } } })
  @ApiOkResponse({ type: SessionDto, description: 'The updated session.', example: { ...SESSION_EXAMPLE, yuxi: { ...SESSION_EXAMPLE.yuxi, revision: 2 } } })
  @ApiErrors('validation_failed', 'invalid_model', 'model_not_allowed', 'tool_approval_pinned', 'not_found', 'revision_mismatch')
  async update(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Body() body: UpdateSessionDto,
    @Headers('if-match') ifMatch: string | undefined,
  ): Promise<SessionDto> {
    return this.updateSession.execute(principal, sessionId, body, parseIfMatch(ifMatch));
  }

  @Delete(':session_id')
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({
    operationId: 'deleteSession',
    summary: 'Delete a session',
    description:
      'A soft delete: the session and everything under it (inputs, turns, items, runs, attachments, its event stream) answer 404 from then on, and it leaves the lists; its stored files are removed by the files sweep. Deleting a cooperation root deletes its whole tree; a member alone is 409 `state_conflict`. Refused (409 `state_conflict`) while a session of the tree has an active turn or pending inputs: cancel them first. Idempotent while its rows are kept: deleting a deleted session of yours answers the same 200 again. SESSION_PURGE_AFTER_S after the delete (7 days by default) the worker purges every row the session owns (a session a fork inherits from only after that fork is purged); deleting a purged session answers 404 `not_found`.',
  })
  @ApiSessionId()
  @ApiOkResponse({ type: SessionDeletedDto, description: 'The session is deleted.', example: { id: SESSION_EXAMPLE.id, object: 'agent.session', deleted: true } })
  @ApiErrors('not_found', 'state_conflict')
  delete(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionDeletedDto> {
    return this.deleteSession.execute(principal, sessionId);
  }

  @Post(':session_id/archive')
  @HttpCode(200)
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({
    operationId: 'archiveSession',
    summary: 'Archive a session',
    description: 'Only without an active turn or pending input (else 409 `state_conflict`); the history stays readable and `yuxi.archived` becomes true.',
  })
  @ApiSessionId()
  @ApiOkResponse({ type: SessionDto, description: 'The archived session.', example: { ...SESSION_EXAMPLE, yuxi: { ...SESSION_EXAMPLE.yuxi, archived: true } } })
  @ApiErrors('not_found', 'state_conflict')
  archive(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionDto> {
    return this.archiveSession.execute(principal, sessionId);
  }

  @Get(':session_id/queue')
  @ApiTags(TAGS.events.name)
  @ApiOperation({
    operationId: 'getQueue',
    summary: 'Get the input queue',
    description: 'Pending inputs in claim order (steers first, then follow-ups, each by received order), and whether claiming is paused after a cancel.',
  })
  @ApiSessionId()
  @ApiOkResponse({ type: QueueDto, description: 'The pending inputs.', example: QUEUE_EXAMPLE })
  @ApiErrors('not_found')
  queue(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<QueueDto> {
    return this.queries.getQueue(principal, sessionId);
  }

  @Get(':session_id/inputs/:input_id')
  @ApiTags(TAGS.events.name)
  @ApiOperation({
    operationId: 'getInput',
    summary: 'Get an input',
    description: 'One received input: its messages as received, its status and, once consumed, the turn, run and history items it became.',
  })
  @ApiSessionId()
  @ApiInputId()
  @ApiOkResponse({ type: InputDetailDto, description: 'The input.', example: INPUT_DETAIL_EXAMPLE })
  @ApiErrors('not_found')
  input(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('input_id') inputId: string): Promise<InputDetailDto> {
    return this.queries.getInput(principal, sessionId, inputId);
  }

  @Get(':session_id/state')
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({ operationId: 'getState', summary: 'Get the runtime state of a session', description: 'Status, current turn, queue and archive state in one small read; content is read from the items.' })
  @ApiSessionId()
  @ApiOkResponse({ type: SessionStateDto, description: 'The runtime state.', example: STATE_EXAMPLE })
  @ApiErrors('not_found')
  state(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionStateDto> {
    return this.queries.getState(principal, sessionId);
  }

  @Get(':session_id/receipt')
  @ApiTags(TAGS.events.name)
  @ApiOperation({
    operationId: 'getReceipt',
    summary: 'Find the receipt of an earlier submission',
    description:
      'By the Idempotency-Key of a submission whose response was lost (the key that created the session finds its initial input\'s receipt). 404 only means "not found yet": the original request may still be in flight; retry it with the same key.',
  })
  @ApiSessionId()
  @ApiQuery({ name: 'idempotency_key', required: true, description: 'The Idempotency-Key the submission was sent with.', schema: { type: 'string', minLength: 1, maxLength: 128, example: 'msg-0001' } })
  @ApiOkResponse({ type: ReceiptDto, description: 'The receipt of the submission, as its 202 (or the create\'s `yuxi.receipt`) was.', example: RECEIPT_EXAMPLE })
  @ApiErrors('not_found', 'validation_failed')
  receipt(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ReceiptQueryDto): Promise<ReceiptDto> {
    return this.queries.getReceipt(principal, sessionId, query.idempotency_key);
  }

  @Get(':session_id/turns')
  @ApiTags(TAGS.turns.name)
  @ApiOperation({ operationId: 'listTurns', summary: 'List the turns of a session', description: 'Turn summaries, including turns without output (cancelled, failed), newest first by default.' })
  @ApiSessionId()
  @ApiOkResponse({ type: TurnListDto, description: 'One page of turns.', example: TURN_LIST_EXAMPLE })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  turns(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ListQueryDto): Promise<TurnListDto> {
    return this.queries.listTurns(principal, sessionId, page(query, 20));
  }

  @Get(':session_id/turns/:turn_id')
  @ApiTags(TAGS.turns.name)
  @ApiOperation({
    operationId: 'getTurn',
    summary: 'Get a turn',
    description: 'The turn with its runs, its waitpoint while it waits, its usage and its result output (the items of `yuxi.result_run_id`).',
  })
  @ApiSessionId()
  @ApiTurnId()
  @ApiOkResponse({ type: TurnDetailDto, description: 'The turn.', example: TURN_DETAIL_EXAMPLE })
  @ApiErrors('not_found')
  turn(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('turn_id') turnId: string): Promise<TurnDetailDto> {
    return this.queries.getTurn(principal, sessionId, turnId);
  }

  @Get(':session_id/turns/:turn_id/items')
  @ApiTags(TAGS.turns.name)
  @ApiOperation({ operationId: 'listTurnItems', summary: 'List the items of a turn', description: 'The public history items of one turn: messages, tool calls and their outputs; newest first by default.' })
  @ApiSessionId()
  @ApiTurnId()
  @ApiOkResponse({ type: ItemListDto, description: 'One page of items, with the runs they reference.', example: ITEM_LIST_EXAMPLE })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  turnItems(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Param('turn_id') turnId: string,
    @Query() query: ListQueryDto,
  ): Promise<ItemListDto> {
    return this.queries.listItems(principal, sessionId, turnId, page(query, 20));
  }

  @Get(':session_id/items')
  @ApiTags(TAGS.turns.name)
  @ApiOperation({ operationId: 'listSessionItems', summary: 'List the items of a session', description: 'The public history of the whole session across turns; newest first by default.' })
  @ApiSessionId()
  @ApiOkResponse({ type: ItemListDto, description: 'One page of items, with the runs they reference.', example: ITEM_LIST_EXAMPLE })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  items(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ListQueryDto): Promise<ItemListDto> {
    return this.queries.listItems(principal, sessionId, null, page(query, 20));
  }

  @Get(':session_id/runs/:run_id')
  @ApiTags(TAGS.turns.name)
  @ApiOperation({
    operationId: 'getRun',
    summary: 'Get a run',
    description: 'One execution segment of a turn: its status, the inputs it consumed, its usage and error. A turn\'s result is its `result_run_id`, not the last run to end.',
  })
  @ApiSessionId()
  @ApiRunId()
  @ApiOkResponse({ type: RunDto, description: 'The run.', example: RUN_EXAMPLE })
  @ApiErrors('not_found')
  run(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('run_id') runId: string): Promise<RunDto> {
    return this.queries.getRun(principal, sessionId, runId);
  }
}
