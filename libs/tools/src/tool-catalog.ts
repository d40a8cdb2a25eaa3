import { Inject, Injectable } from '@nestjs/common';
import { BUILTIN_TOOLS, executeBuiltin, isBuiltinToolName } from './builtin-tools.js';
import { coordinationTools, isCoordinationTool } from './coordination-tools.js';
import { Calculator } from './calculator.js';
import { TOOL_NAME_PATTERN } from './declarations.js';
import { McpConnector } from './mcp-connector.js';
import { type McpToolDeclaration, type ResolvedTool, type ToolCallContext, type ToolDeclaration, type ToolOutcome, WORKDIR_FILES, type WorkdirFiles } from './tool.types.js';

import { ToolSourceError } from './errors.js';

export { ToolSourceError };

/** The tools of the sources that answered, and why the others were left out. */
export interface AvailableTools {
  tools: ResolvedTool[];
  unavailable: ToolSourceError[];
}

const MCP_SOURCE = 'mcp:';

/** Turns an agent's declarations into the tools a model is offered, and runs the worker-executed ones. */
@Injectable()
export class ToolCatalog {
  constructor(
    private readonly connector: McpConnector,
    private readonly calculator: Calculator,
    @Inject(WORKDIR_FILES) private readonly files: WorkdirFiles,
  ) {}

  /**
   * In declaration order; a name already taken is dropped (first wins), so an MCP server cannot
   * shadow a builtin or a client function. A coordinator (`coordination`) gets the coordination
   * tools, whose names no declared tool takes. Throws ToolSourceError when an MCP server is unreachable.
   */
  async resolve(declarations: ToolDeclaration[], signal?: AbortSignal, options: { coordination?: boolean } = {}): Promise<ResolvedTool[]> {
    return this.merge(await Promise.all(declarations.map((decl) => this.resolveOne(decl, signal))), options);
  }

  /**
   * As resolve, but a tool source that cannot be reached is left out rather than failing the lot:
   * a turn goes on with the tools it has. `unavailable` holds why each source was left out, for
   * the operator's log; what a client hears of it is generic (capability_limited).
   */
  async resolveAvailable(declarations: ToolDeclaration[], signal?: AbortSignal, options: { coordination?: boolean } = {}): Promise<AvailableTools> {
    const unavailable: ToolSourceError[] = [];
    const skipUnavailable = (error: unknown): ResolvedTool[] => {
      if (!(error instanceof ToolSourceError)) throw error;
      unavailable.push(error);
      return [];
    };
    // Only an MCP listing can fail this way; the other declarations resolve as they do in resolve.
    const groups = await Promise.all(declarations.map((decl) => (decl.type === 'mcp' ? this.resolveOne(decl, signal).catch(skipUnavailable) : this.resolveOne(decl, signal))));
    return { tools: this.merge(groups, options), unavailable };
  }

  private merge(groups: ResolvedTool[][], options: { coordination?: boolean }): ResolvedTool[] {
    const byName = new Map<string, ResolvedTool>();
    for (const tool of groups.flat()) if (!byName.has(tool.name) && !isCoordinationTool(tool.name)) byName.set(tool.name, tool);
    if (options.coordination) for (const tool of coordinationTools()) byName.set(tool.name, tool);
    return [...byName.values()];
  }

  /** Runs a server-executed tool (`executor: 'server'`); rejects with the signal's reason on abort. */
  async execute(tool: ResolvedTool, declarations: ToolDeclaration[], args: object, ctx: ToolCallContext): Promise<ToolOutcome> {
    if (tool.executor !== 'server') throw new Error(`tool ${tool.name} is executed by the ${tool.executor}, not the worker`);
    if (tool.source === 'builtin') return executeBuiltin(tool.name, args as Record<string, unknown>, ctx, this.calculator, this.files);
    const label = tool.source.startsWith(MCP_SOURCE) ? tool.source.slice(MCP_SOURCE.length) : undefined;
    const decl = declarations.find((d): d is McpToolDeclaration => d.type === 'mcp' && d.server_label === label);
    if (!decl) throw new Error(`no declaration for the source ${tool.source} of tool ${tool.name}`);
    return this.connector.callTool(decl, tool.name, args, ctx);
  }

  private async resolveOne(decl: ToolDeclaration, signal: AbortSignal | undefined): Promise<ResolvedTool[]> {
    switch (decl.type) {
      case 'function':
        return [
          {
            name: decl.name,
            description: decl.description ?? '',
            parameters: decl.parameters ?? { type: 'object', properties: {} },
            executor: 'client',
            requiresApproval: false,
            idempotent: false,
            source: 'client',
          },
        ];
      case 'builtin': {
        if (!isBuiltinToolName(decl.name)) return [];
        const def = BUILTIN_TOOLS[decl.name];
        return [
          {
            name: def.name,
            description: def.description,
            parameters: def.parameters,
            executor: def.executor,
            requiresApproval: decl.requires_approval ?? false,
            idempotent: decl.idempotent ?? true,
            source: 'builtin',
          },
        ];
      }
      case 'mcp': {
        const tools = await this.connector.listTools(decl, signal);
        return (
          tools
            // Model APIs reject other function names (MCP allows dots and slashes); such a tool cannot be offered.
            .filter((t) => TOOL_NAME_PATTERN.test(t.name))
            .map((t) => ({
              name: t.name,
              description: t.description,
              parameters: t.inputSchema,
              executor: 'server' as const,
              requiresApproval: decl.requires_approval ?? false,
              idempotent: decl.idempotent ?? false,
              source: `${MCP_SOURCE}${decl.server_label}`,
            }))
        );
      }
    }
  }
}
