export { AgentDto, AgentListDto } from './agent.dto.js';
export { type AgentEntity, TOOL_APPROVAL_MODES, type ToolApprovalMode } from './agent.entity.js';
export { AgentsModule } from './agents.module.js';
export { AgentsService } from './agents.service.js';
