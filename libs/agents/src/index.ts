export { APPROVAL_PIN_RULE, MODEL_OVERRIDE_RULE, SessionTtlDto, TTL_RULE } from './agent.dto.js';
export { type EffectiveTtl, NO_TTL, parseTtl, resolveSessionTtl, type SessionTtl, TTL_FIELDS, TTL_MAX_S, TTL_MIN_S, ttlExpiresAt, ttlView } from './session-ttl.js';
export { AgentDefinitionDto, AgentDeletedDto, AgentDto, AgentListDto, AgentVersionDto, AgentVersionListDto, BuiltinToolDto, FunctionToolDto, McpBearerAuthDto, McpClientCredentialsAuthDto, McpToolDto, PutAgentDto } from './agent.dto.js';
export {
  type AgentContext,
  type AgentEntity,
  COMPACTION_MODES,
  type CompactionMode,
  type AgentLimits,
  type AgentPolicySnapshot,
  type AgentSnapshot,
  DEFAULT_MULTI_AGENT,
  type MultiAgentPolicy,
  DEFAULT_AGENT_LIMITS,
  TOOL_APPROVAL_MODES,
  type ToolApprovalMode,
} from './agent.entity.js';
export { AgentAdmin } from './agent-admin.js';
export { assertApprovalMode, assertModelOverride, atLeastPinned, managesAgent, mayTrustForSession } from './agent-policy.js';
export { type AgentDefinition, parseAgentDefinition } from './agent-definition.js';
export { AgentsFile } from './agents-file.js';
export { AgentsModule } from './agents.module.js';
export { type AgentActor, AgentsService, type AgentViewer, DEFAULT_AGENT_ID, effectiveLimits } from './agents.service.js';
export { type EnvironmentParam, ENVIRONMENT_BOUNDS, type HostedEnvironmentParam, parseEnvironmentParam, type ParsedEnvironment, UNSUPPORTED_ENVIRONMENT_FIELDS, workspacePath } from './environment-param.js';
export { networkLoosening, resolveEnvironment } from './environment-resolution.js';
export { AgentEnvironmentDto, ENVIRONMENT_DEFAULT_RULE, EnvironmentFileParamDto, EnvironmentLimitsParamDto, EnvironmentNetworkParamDto, EnvironmentParamDto } from './environment.dto.js';
