import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { GetSessionStorage, SessionStorageDto } from '#libs/protocol';
import { SESSION_STORAGE_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { ApiSessionId } from './api-params.js';

/** What a session keeps: its rows per table, its files and its workspace, in bytes. */
@ApiTags(TAGS.sessions.name)
@ApiBearerAuth()
@Controller('api/v1/agents/sessions/:session_id/storage')
export class SessionStorageController {
  constructor(private readonly getStorage: GetSessionStorage) {}

  @Get()
  @ApiOperation({
    operationId: 'getSessionStorage',
    summary: 'Get what a session stores',
    description:
      'The session\'s own rows in each table (items, durable events, inputs, turns, runs, steps, kept model requests) with the bytes they take as stored, the files it holds with their recorded sizes, and its workspace (the files its latest version holds, and the versions\' rows). A fork counts its own rows only: its inherited history is its source\'s, counted there. A workspace the session shares (its project\'s, its tree root\'s) is shown with `shared: true`, and a fork\'s workspace that is still its source\'s version with `inherited: true`; both are left out of `total_bytes`. Read when asked, each table through an index on the session, in one snapshot under a time limit: the figures are the database\'s at `measured_at`. Another caller\'s session is 404.',
  })
  @ApiSessionId()
  @ApiOkResponse({ type: SessionStorageDto, description: 'The session\'s storage.', example: SESSION_STORAGE_EXAMPLE })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('session_id') sessionId: string): Promise<SessionStorageDto> {
    return this.getStorage.execute(principal, sessionId);
  }
}
