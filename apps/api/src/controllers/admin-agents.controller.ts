import { Body, Controller, Delete, Get, Param, Put, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { AgentAdmin, AgentDeletedDto, AgentDto, AgentListDto, AgentsService, PutAgentDto } from '#libs/agents';
import { assertFullAccess, CurrentPrincipal, type Principal } from '#libs/auth';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/v1/admin/agents')
export class AdminAgentsController {
  constructor(
    private readonly agents: AgentsService,
    private readonly admin: AgentAdmin,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List every saved agent, private ones included (full access only)' })
  @ApiOkResponse({ type: AgentListDto })
  @ApiErrors('forbidden')
  list(@CurrentPrincipal() principal: Principal): Promise<AgentListDto> {
    assertFullAccess(principal);
    return this.agents.adminList({ actorId: principal.actorId, keyId: principal.keyId, isAdmin: principal.isAdmin });
  }

  @Put(':agent_id')
  @ApiOperation({
    summary: 'Create or replace a saved agent (full access only)',
    description:
      'The body is the whole definition. A replacement gets the next `version`; sessions keep the snapshot of the agent they were created with, so only sessions created afterwards use the new definition.',
  })
  @ApiBody({ type: PutAgentDto })
  @ApiOkResponse({ type: AgentDto, description: 'Replaced.' })
  @ApiCreatedResponse({ type: AgentDto, description: 'Created.' })
  @ApiErrors('forbidden', 'not_found', 'invalid_agent', 'invalid_json')
  async put(@CurrentPrincipal() principal: Principal, @Param('agent_id') agentId: string, @Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentDto> {
    assertFullAccess(principal);
    const { agent, created } = await this.admin.put(principal, agentId, body);
    res.status(created ? 201 : 200);
    return agent;
  }

  @Delete(':agent_id')
  @ApiOperation({ summary: 'Delete a saved agent (full access only)', description: 'Existing sessions keep working with their snapshot; new sessions cannot use it.' })
  @ApiOkResponse({ type: AgentDeletedDto })
  @ApiErrors('forbidden', 'not_found', 'state_conflict')
  async remove(@CurrentPrincipal() principal: Principal, @Param('agent_id') agentId: string): Promise<AgentDeletedDto> {
    assertFullAccess(principal);
    await this.agents.remove({ actorId: principal.actorId, keyId: principal.keyId, isAdmin: principal.isAdmin }, agentId);
    return { id: agentId, object: 'agent.deleted', deleted: true };
  }
}
