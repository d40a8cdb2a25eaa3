import { Body, Controller, Get, Headers, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
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
  SessionDto,
  SessionListDto,
  SessionListQueryDto,
  SessionQueriesService,
  SessionStateDto,
  ArchiveSession,
  CreateSession,
  UpdateSession,
  UpdateSessionDto,
} from '#libs/protocol';
import { ItemListDto, RunDto, TurnDetailDto, TurnListDto } from '#libs/turns';
import { ApiErrors } from './api-errors.decorator.js';
import { sendIdempotent } from './send-idempotent.js';
import { SseResponder } from './sse-responder.js';

const IDEMPOTENCY_HEADER = {
  name: 'Idempotency-Key',
  required: true,
  description: '1–128 characters. Same key + same intent replays the first response; a different intent is 409.',
  schema: { type: 'string', minLength: 1, maxLength: 128 },
};

function page(query: ListQueryDto, defaultLimit: number) {
  return { after: query.after, limit: query.limit ?? defaultLimit, order: query.order ?? 'desc' } as const;
}

@ApiTags('agents-public-v1')
@ApiBearerAuth()
@Controller('api/v1/agents/sessions')
export class SessionsController {
  constructor(
    private readonly createSession: CreateSession,
    private readonly updateSession: UpdateSession,
    private readonly archiveSession: ArchiveSession,
    private readonly queries: SessionQueriesService,
    private readonly sse: SseResponder,
  ) {}

  @Post()
  @ApiOperation({
    summary: 'Create a session, empty or with its first input',
    description:
      'The input, its receipt, the session and the binding of `yuxi.attachment_file_ids` commit in one transaction before the response (an unknown file is 404, an attached one 409 `file_already_bound`; nothing is stored then). With attachments the input waits with `attachment_status: preparing` until a worker has put the files in the session workdir.',
  })
  @ApiHeader(IDEMPOTENCY_HEADER)
  // A sample that succeeds as is in Swagger's Try it out (no stream: true, no placeholder file ids).
  @ApiBody({ type: CreateSessionDto, examples: { 'with input': { value: { agent_id: 'default-chatbot', title: 'Quarterly report', input: 'Hello!' } }, empty: { value: { agent_id: 'default-chatbot' } } } })
  @ApiCreatedResponse({
    type: SessionDto,
    description:
      'The session; `yuxi.receipt` holds the acceptance of the initial input. With `stream: true` the answer is the session event stream (text/event-stream), starting with `agent.session.created` whose `session` is this resource.',
  })
  @ApiProduces('application/json', 'text/event-stream')
  @ApiErrors('validation_failed', 'invalid_json', 'idempotency_key_required', 'invalid_model', 'not_found', 'idempotency_conflict', 'file_already_bound', 'payload_too_large')
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
  @ApiOperation({ summary: 'List sessions', description: 'Stable (created_at, id) order; pass the previous page last_id as `after`.' })
  @ApiOkResponse({ type: SessionListDto })
  @ApiErrors('validation_failed', 'invalid_cursor')
  list(@CurrentPrincipal() principal: Principal, @Query() query: SessionListQueryDto): Promise<SessionListDto> {
    return this.queries.listSessions(
      principal,
      {
        agentId: query.agent_id,
        archived: query.archived === undefined ? undefined : query.archived === 'true',
        isPinned: query.is_pinned === undefined ? undefined : query.is_pinned === 'true',
      },
      page(query, 50),
    );
  }

  @Get(':session_id')
  @ApiOperation({ summary: 'Get a session' })
  @ApiOkResponse({ type: SessionDto })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionDto> {
    return this.queries.getSession(principal, sessionId);
  }

  @Post(':session_id')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Update title, pin, read state and the defaults for later inputs',
    description: 'Every field may be omitted; explicit null is 422. agent.model and tool_approval_mode affect only inputs received afterwards.',
  })
  @ApiBody({ type: UpdateSessionDto })
  @ApiOkResponse({ type: SessionDto })
  @ApiErrors('validation_failed', 'invalid_model', 'not_found')
  update(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Body() body: UpdateSessionDto): Promise<SessionDto> {
    return this.updateSession.execute(principal, sessionId, body);
  }

  @Post(':session_id/archive')
  @HttpCode(200)
  @ApiOperation({ summary: 'Archive a session with no active turn and no pending input; history stays readable' })
  @ApiOkResponse({ type: SessionDto })
  @ApiErrors('not_found', 'state_conflict')
  archive(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionDto> {
    return this.archiveSession.execute(principal, sessionId);
  }

  @Get(':session_id/queue')
  @ApiOperation({ summary: 'Pending inputs in claim order, and whether the queue is paused' })
  @ApiOkResponse({ type: QueueDto })
  @ApiErrors('not_found')
  queue(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<QueueDto> {
    return this.queries.getQueue(principal, sessionId);
  }

  @Get(':session_id/inputs/:input_id')
  @ApiOperation({ summary: 'One received input: its messages, status and, once consumed, its turn, run and items' })
  @ApiOkResponse({ type: InputDetailDto })
  @ApiErrors('not_found')
  input(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('input_id') inputId: string): Promise<InputDetailDto> {
    return this.queries.getInput(principal, sessionId, inputId);
  }

  @Get(':session_id/state')
  @ApiOperation({ summary: 'Runtime state of the session (content is read from items)' })
  @ApiOkResponse({ type: SessionStateDto })
  @ApiErrors('not_found')
  state(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionStateDto> {
    return this.queries.getState(principal, sessionId);
  }

  @Get(':session_id/receipt')
  @ApiOperation({ summary: 'Find the receipt of an earlier submission by its Idempotency-Key', description: '404 only means "not found yet": the original request may still be in flight.' })
  @ApiOkResponse({ type: ReceiptDto })
  @ApiErrors('not_found', 'validation_failed')
  receipt(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ReceiptQueryDto): Promise<ReceiptDto> {
    return this.queries.getReceipt(principal, sessionId, query.idempotency_key);
  }

  @Get(':session_id/turns')
  @ApiOperation({ summary: 'List the turns of a session (including turns without output)' })
  @ApiOkResponse({ type: TurnListDto })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  turns(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ListQueryDto): Promise<TurnListDto> {
    return this.queries.listTurns(principal, sessionId, page(query, 20));
  }

  @Get(':session_id/turns/:turn_id')
  @ApiOperation({ summary: 'Get a turn with its runs, waitpoint and result output' })
  @ApiOkResponse({ type: TurnDetailDto })
  @ApiErrors('not_found')
  turn(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('turn_id') turnId: string): Promise<TurnDetailDto> {
    return this.queries.getTurn(principal, sessionId, turnId);
  }

  @Get(':session_id/turns/:turn_id/items')
  @ApiOperation({ summary: 'List the public items of one turn' })
  @ApiOkResponse({ type: ItemListDto })
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
  @ApiOperation({ summary: 'List the public items of a session' })
  @ApiOkResponse({ type: ItemListDto })
  @ApiErrors('not_found', 'invalid_cursor', 'validation_failed')
  items(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Query() query: ListQueryDto): Promise<ItemListDto> {
    return this.queries.listItems(principal, sessionId, null, page(query, 20));
  }

  @Get(':session_id/runs/:run_id')
  @ApiOperation({ summary: 'Get one run (execution segment) of a session' })
  @ApiOkResponse({ type: RunDto })
  @ApiErrors('not_found')
  run(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string, @Param('run_id') runId: string): Promise<RunDto> {
    return this.queries.getRun(principal, sessionId, runId);
  }
}
