export type {
  BuiltinToolDeclaration,
  FunctionToolDeclaration,
  McpToolDeclaration,
  ResolvedTool,
  ToolCallContext,
  ToolDeclaration,
  ToolExecutor,
  ToolOutcome,
  ToolMedia,
  ToolProgress,
  McpAuthReference,
  WorkdirFile,
  WorkdirFiles,
} from './tool.types.js';
export { WORKDIR_FILES } from './tool.types.js';
export { listFiles, MAX_READ_CHARS, readFile } from './file-tools.js';
export { parseToolDeclarations, MAX_TOOLS, REDACTED_SECRET, TOOL_NAME_PATTERN } from './declarations.js';
export {
  BUILTIN_TOOL_NAMES,
  BUILTIN_TOOLS,
  currentTime,
  isBuiltinToolName,
  type BuiltinToolDefinition,
  type BuiltinToolName,
  webSearchParameters,
} from './builtin-tools.js';
export { COORDINATION_TOOL_NAMES, coordinationItemType, type CoordinationToolName, coordinationTools, isCoordinationTool } from './coordination-tools.js';
export { Calculator, CALCULATOR_TIMEOUT_MS } from './calculator.js';
export { validateToolArguments } from './arguments.js';
export { McpConnector, type McpToolInfo } from './mcp-connector.js';
export { MAX_EMBEDDED_RESOURCE_BYTES, MAX_MCP_OUTPUT_CHARS, outcomeOf } from './mcp/results.js';
export { credentialsKey, McpAuth, type McpTransportAuth, SECRET_CACHE_MS } from './mcp/auth.js';
export { McpHeaderBox } from './mcp/header-box.js';
export { remoteProgressMessage, sanitiseRemoteText, unavailableReason } from './mcp/remote-errors.js';
export { McpOutbound } from './mcp/outbound.js';
export { McpSessionPool } from './mcp/session-pool.js';
export { type AvailableTools, offeredNames, type ResolveOptions, ToolCatalog, ToolSourceError } from './tool-catalog.js';
export { ToolsModule } from './tools.module.js';
export {
  ELICITATION_ACTION_QUESTION,
  ELICITATION_ACTIONS,
  type ElicitationAnswer,
  type ElicitationQuestion,
  elicitationQuestions,
  type ElicitationRequest,
  elicitationRequest,
  elicitationResult,
  elicitationUrlProblem,
  type WaitpointElicitation,
} from './mcp/elicitation.js';
export { LinearSchemaValidator } from './schema-cache.js';
export { MAX_QUERY_CHARS, providerRequest, WEB_SEARCH_MAX_RESPONSE_BYTES, WebSearch, type WebSearchQuery } from './web-search/web-search.js';
export { CITATION_NOTE, formatResults, parseResults, plainText, type WebSearchResult } from './web-search/results.js';
export { HARNESS_SOURCE, HARNESS_TOOL_NAMES, harnessTools, type HarnessToolName, isHarnessToolName, MAX_COMMAND_CHARS, MAX_WRITE_BYTES } from './harness-tools.js';
