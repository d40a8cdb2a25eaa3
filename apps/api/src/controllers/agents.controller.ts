import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AgentDto, AgentListDto, AgentsService } from '#libs/agents';
import { agentViewerOf, CurrentPrincipal, type Principal } from '#libs/auth';
import { AGENT_EXAMPLE, AGENT_LIST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.agents.name)
@ApiBearerAuth()
@Controller('api/v1/agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  @ApiOperation({ operationId: 'listAgents', summary: 'List agents', description: 'The saved agents the caller can start sessions with: the public ones and the caller\'s private ones.' })
  @ApiOkResponse({ type: AgentListDto, description: 'The visible agents.', example: AGENT_LIST_EXAMPLE })
  @ApiErrors()
  list(@CurrentPrincipal() principal: Principal): Promise<AgentListDto> {
    return this.agents.list({ ...agentViewerOf(principal), isAdmin: principal.isAdmin });
  }

  @Get(':agent_id')
  @ApiOperation({ operationId: 'getAgent', summary: 'Get an agent', description: 'One saved agent visible to the caller: its model, tools and limits (instructions for administrators only).' })
  @ApiParam({ name: 'agent_id', description: 'The agent\'s slug.', schema: { type: 'string', minLength: 1, maxLength: 64, example: 'default-chatbot' } })
  @ApiOkResponse({ type: AgentDto, description: 'The agent.', example: AGENT_EXAMPLE })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('agent_id') agentId: string): Promise<AgentDto> {
    return this.agents.getDto({ ...agentViewerOf(principal), isAdmin: principal.isAdmin }, agentId);
  }
}
