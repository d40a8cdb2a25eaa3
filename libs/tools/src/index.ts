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
} from './builtin-tools.js';
export { COORDINATION_TOOL_NAMES, coordinationItemType, type CoordinationToolName, coordinationTools, isCoordinationTool } from './coordination-tools.js';
export { Calculator, CALCULATOR_TIMEOUT_MS } from './calculator.js';
export { validateToolArguments } from './arguments.js';
export { McpConnector, type McpToolInfo } from './mcp-connector.js';
export { MAX_MCP_OUTPUT_CHARS } from './mcp/results.js';
export { credentialsKey, McpAuth, type McpTransportAuth, SECRET_CACHE_MS } from './mcp/auth.js';
export { type AvailableTools, ToolCatalog, ToolSourceError } from './tool-catalog.js';
export { ToolsModule } from './tools.module.js';
