import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AgentDto, AgentListDto, AgentsService } from '#libs/agents';
import { agentViewerOf, CurrentPrincipal, type Principal } from '#libs/auth';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags('agents-public-v1')
@ApiBearerAuth()
@Controller('api/v1/agents')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get()
  @ApiOperation({ summary: 'List the saved agents visible to the caller' })
  @ApiOkResponse({ type: AgentListDto })
  @ApiErrors()
  list(@CurrentPrincipal() principal: Principal): Promise<AgentListDto> {
    return this.agents.list(agentViewerOf(principal));
  }

  @Get(':agent_id')
  @ApiOperation({ summary: 'Get a saved agent' })
  @ApiOkResponse({ type: AgentDto })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('agent_id') agentId: string): Promise<AgentDto> {
    return this.agents.getDto(agentViewerOf(principal), agentId);
  }
}
