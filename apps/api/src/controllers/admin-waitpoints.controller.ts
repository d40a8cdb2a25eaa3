import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { assertViewer, CurrentPrincipal, type Principal } from '#libs/auth';
import { ListOpenWaitpoints, OpenWaitpointListDto, WaitpointInboxQueryDto } from '#libs/operations';
import { OPEN_WAITPOINT_LIST_EXAMPLE } from '../openapi/operator-examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/waitpoints')
export class AdminWaitpointsController {
  constructor(private readonly inbox: ListOpenWaitpoints) {}

  @Get()
  @ApiOperation({
    operationId: 'listOpenWaitpoints',
    summary: 'List open waitpoints across sessions (the inbox)',
    description:
      'Turns of any owner that wait for a person or the client: questions, approvals, client tool calls and budgets without room, newest first by default (a coordinator waiting for its members only with `kind=cooperation`). Each names its session, owner, agent, turn and run, with the questions or tool calls; answer one through the session\'s events. A waitpoint leaves the list once resolved; `after` (a waitpoint id) stays valid when that waitpoint is resolved meanwhile. Viewers, operators and administrators.',
  })
  @ApiOkResponse({ type: OpenWaitpointListDto, description: 'One page of open waitpoints.', example: OPEN_WAITPOINT_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'invalid_cursor', 'validation_failed', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: WaitpointInboxQueryDto): Promise<OpenWaitpointListDto> {
    assertViewer(principal);
    return this.inbox.execute({ kind: query.kind }, { after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }
}
