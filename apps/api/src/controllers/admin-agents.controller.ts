import { Body, Controller, Delete, Get, Param, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AgentAdmin, AgentDeletedDto, AgentDto, AgentListDto, AgentsService, AgentVersionListDto, PutAgentDto } from '#libs/agents';
import { assertAdmin, assertFullAccess, CurrentPrincipal, type Principal } from '#libs/auth';
import { ListQueryDto } from '#libs/protocol';
import { AGENT_DELETED_EXAMPLE, AGENT_LIST_EXAMPLE, AGENT_VERSION_LIST_EXAMPLE, PUT_AGENT_EXAMPLE, PUT_AGENT_RESPONSE_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const AGENT_ID = { name: 'agent_id', description: 'The agent\'s slug: 1–64 characters, a-z, 0-9, `_` and `-`, starting with a letter or digit.', schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$', example: 'support-bot' } };

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/agents')
export class AdminAgentsController {
  constructor(
    private readonly agents: AgentsService,
    private readonly admin: AgentAdmin,
  ) {}

  @Get()
  @ApiOperation({ operationId: 'adminListAgents', summary: 'List every agent', description: 'Every saved agent, private ones included, with their instructions where the caller administers them (full access only).' })
  @ApiOkResponse({ type: AgentListDto, description: 'Every agent.', example: AGENT_LIST_EXAMPLE })
  @ApiErrors('forbidden')
  list(@CurrentPrincipal() principal: Principal): Promise<AgentListDto> {
    assertFullAccess(principal);
    return this.agents.adminList({ actorId: principal.actorId, keyId: principal.keyId, isAdmin: principal.isAdmin });
  }

  @Put(':agent_id')
  @ApiOperation({
    operationId: 'putAgent',
    summary: 'Create or replace an agent',
    description:
      'The body is the whole definition. A replacement gets the next `version`; sessions keep the snapshot of the agent they were created with, so only sessions created afterwards use the new definition. Full access only.',
  })
  @ApiParam(AGENT_ID)
  @ApiBody({ type: PutAgentDto, examples: { agent: { summary: 'A scripted agent with the calculator', value: PUT_AGENT_EXAMPLE } } })
  @ApiOkResponse({ type: AgentDto, description: 'Replaced: the next version.', example: { ...PUT_AGENT_RESPONSE_EXAMPLE, yuxi: { ...PUT_AGENT_RESPONSE_EXAMPLE.yuxi, version: 2 } } })
  @ApiCreatedResponse({ type: AgentDto, description: 'Created.', example: PUT_AGENT_RESPONSE_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'invalid_agent', 'mcp_url_not_allowed', 'invalid_json')
  async put(@CurrentPrincipal() principal: Principal, @Param('agent_id') agentId: string, @Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentDto> {
    assertFullAccess(principal);
    const { agent, created } = await this.admin.put(principal, agentId, body);
    res.status(created ? 201 : 200);
    return agent;
  }

  @Get(':agent_id/versions')
  @ApiOperation({
    operationId: 'listAgentVersions',
    summary: 'List an agent\'s versions',
    description:
      'The version history of a live agent: each version a create or replace made (`yuxi.version`), with the whole definition as written (a valid PUT body; MCP credentials shown as "***"), who wrote it and when; newest first by default. Putting the same definition again through AGENTS_FILE makes no version. An agent saved before the history was kept starts with the version it had then (`actor_id` null). The cursor is a version number (`last_id`). Administrators only.',
  })
  @ApiParam(AGENT_ID)
  @ApiOkResponse({ type: AgentVersionListDto, description: 'One page of versions.', example: AGENT_VERSION_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'invalid_cursor', 'validation_failed', 'rate_limited')
  versions(@CurrentPrincipal() principal: Principal, @Param('agent_id') agentId: string, @Query() query: ListQueryDto): Promise<AgentVersionListDto> {
    assertAdmin(principal);
    return this.agents.versions(agentId, { after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }

  @Delete(':agent_id')
  @ApiOperation({
    operationId: 'deleteAgent',
    summary: 'Delete an agent',
    description: 'Existing sessions keep working with their snapshot; new sessions cannot use it. `default-chatbot` cannot be deleted. Full access only.',
  })
  @ApiParam(AGENT_ID)
  @ApiOkResponse({ type: AgentDeletedDto, description: 'Deleted.', example: AGENT_DELETED_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'state_conflict')
  async remove(@CurrentPrincipal() principal: Principal, @Param('agent_id') agentId: string): Promise<AgentDeletedDto> {
    assertFullAccess(principal);
    await this.agents.remove({ actorId: principal.actorId, keyId: principal.keyId, isAdmin: principal.isAdmin }, agentId);
    return { id: agentId, object: 'agent.deleted', deleted: true };
  }
}
