import { Body, Controller, Headers, Param, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { ForkSession, ForkSessionDto, SessionDto } from '#libs/protocol';
import { SESSION_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { ApiIdempotencyKey, ApiSessionId } from './api-params.js';
import { sendIdempotent } from './send-idempotent.js';

const FORK_ID = '7d0c5a52-1f0e-4c49-9d0b-3f2d7c1e6a90';
const FORKED_SESSION_EXAMPLE = {
  ...SESSION_EXAMPLE,
  id: FORK_ID,
  status: 'idle',
  yuxi: {
    ...SESSION_EXAMPLE.yuxi,
    unread: false,
    current_turn: null,
    root_session_id: FORK_ID,
    forked_from: { session_id: SESSION_EXAMPLE.id, turn_id: SESSION_EXAMPLE.yuxi.current_turn?.id ?? null, position: 'after' },
  },
};

/** Forks of a session: a new session sharing the source's history up to a turn, by reference. */
@ApiBearerAuth()
@Controller('api/v1/agents/sessions')
export class SessionForksController {
  constructor(private readonly forkSession: ForkSession) {}

  @Post(':session_id/fork')
  @ApiTags(TAGS.sessions.name)
  @ApiOperation({
    operationId: 'forkSession',
    summary: 'Fork a session at a turn',
    description:
      'A new root session of the same owner, agent snapshot, model, project and environment, whose history is the source\'s up to the end of `after_turn_id` (a finished turn; neither id: the last finished turn) or up to the start of `before_turn_id` (edit and resend), shared by reference: no item is copied, and the cost does not depend on the history\'s length. Its items list starts with the inherited items (same ids, same order, each keeping the `session_id` of the session that ran it) and goes on with its own; the model\'s context is the source\'s at that point, compaction included; with an environment its workspace starts as the source\'s was at that point. `title` and `metadata` default to the source\'s; approvals given for the rest of the source (`approve_session`), budgets and the queue are not carried over. The source is never changed or waited for (it may be running a turn). Forking a member of a cooperation tree is 409 `state_conflict` (fork its root, `details.root_session_id`); another owner\'s or a deleted session, or a turn the source does not show, is 404; `after_turn_id` naming a turn that has not finished, or a session with no finished turn yet, is 409 `state_conflict`; both ids is 422. The new session\'s stream starts with `agent.session.created`.',
  })
  @ApiSessionId()
  @ApiIdempotencyKey('fork-0001')
  @ApiBody({ type: ForkSessionDto, examples: { 'last finished turn': { value: {} }, 'edit and resend': { value: { before_turn_id: SESSION_EXAMPLE.yuxi.current_turn?.id, title: 'Second try' } } } })
  @ApiCreatedResponse({ type: SessionDto, example: FORKED_SESSION_EXAMPLE, description: 'The fork; `yuxi.forked_from` names the source, the turn and the position.' })
  @ApiErrors('validation_failed', 'invalid_json', 'idempotency_key_required', 'not_found', 'state_conflict', 'idempotency_conflict', 'fork_depth_exceeded')
  async fork(
    @CurrentPrincipal() principal: Principal,
    @Param('session_id') sessionId: string,
    @Body() body: ForkSessionDto,
    @Headers('idempotency-key') key: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    sendIdempotent(res, await this.forkSession.execute(principal, sessionId, body, key));
  }
}
