import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { BUILTIN_TOOLS, executeBuiltin, isBuiltinToolName, webSearchParameters } from './builtin-tools.js';
import { COORDINATION_TOOL_NAMES, coordinationTools, isCoordinationTool } from './coordination-tools.js';
import { Calculator } from './calculator.js';
import { HARNESS_SOURCE, HARNESS_TOOL_NAMES, harnessTools, isHarnessToolName } from './harness-tools.js';
import { TOOL_NAME_PATTERN } from './declarations.js';
import { McpConnector } from './mcp-connector.js';
import { type McpToolDeclaration, type ResolvedTool, type ToolCallContext, type ToolDeclaration, type ToolOutcome, WORKDIR_FILES, type WorkdirFiles } from './tool.types.js';
import { WebSearch } from './web-search/web-search.js';

import { ToolSourceError } from './errors.js';

export { ToolSourceError };

/** The tools of the sources that answered, and why the others were left out. */
export interface AvailableTools {
  tools: ResolvedTool[];
  unavailable: ToolSourceError[];
}

/**
 * What the session adds to its agent's tools: `coordination`, a coordinator's tools; `environment`,
 * the session has a workspace (the harness's tools).
 */
export interface ResolveOptions {
  coordination?: boolean;
  environment?: boolean;
}

const MCP_SOURCE = 'mcp:';

/** Turns an agent's declarations into the tools a model is offered, and runs the worker-executed ones. */
@Injectable()
export class ToolCatalog {
  constructor(
    private readonly connector: McpConnector,
    private readonly calculator: Calculator,
    @Inject(WORKDIR_FILES) private readonly files: WorkdirFiles,
    private readonly webSearch: WebSearch,
  ) {}

  /**
   * In declaration order. Builtins and client functions keep their names; an MCP tool whose name
   * another server's tool, a declared tool or a coordination tool also has is offered as
   * `<server_label>__<name>` (see offeredNames); a name still taken after that is dropped (first
   * wins). A coordinator (`coordination`) gets the coordination tools, whose names no declared tool
   * takes. A session with an `environment` gets the harness's tools (shell, write_file, apply_patch,
   * list_files, read_file), which take their names from any declared tool (the builtin list_files
   * and read_file by file id give way to the workspace's by path); an MCP tool of such a name is
   * offered qualified. Throws ToolSourceError when an MCP server is unreachable.
   */
  async resolve(declarations: ToolDeclaration[], signal?: AbortSignal, options: ResolveOptions = {}): Promise<ResolvedTool[]> {
    return this.merge(await Promise.all(declarations.map((decl) => this.resolveOne(decl, signal))), options);
  }

  /**
   * As resolve, but a tool source that cannot be reached is left out rather than failing the lot:
   * a turn goes on with the tools it has. `unavailable` holds why each source was left out, for
   * the operator's log; what a client hears of it is generic (capability_limited).
   */
  async resolveAvailable(declarations: ToolDeclaration[], signal?: AbortSignal, options: ResolveOptions = {}): Promise<AvailableTools> {
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

  private merge(groups: ResolvedTool[][], options: ResolveOptions): ResolvedTool[] {
    const byName = new Map<string, ResolvedTool>();
    const taken = (name: string): boolean => isCoordinationTool(name) || (options.environment === true && isHarnessToolName(name));
    for (const tool of offeredNames(groups.flat(), options.environment ? HARNESS_TOOL_NAMES : [])) if (!byName.has(tool.name) && !taken(tool.name)) byName.set(tool.name, tool);
    if (options.coordination) for (const tool of coordinationTools()) byName.set(tool.name, tool);
    if (options.environment) for (const tool of harnessTools()) byName.set(tool.name, tool);
    return [...byName.values()];
  }

  /**
   * Runs a server-executed tool (`executor: 'server'`); rejects with the signal's reason on abort.
   * Not the harness's tools: they run in the session's workspace, which the runtime reaches.
   */
  async execute(tool: ResolvedTool, declarations: ToolDeclaration[], args: object, ctx: ToolCallContext): Promise<ToolOutcome> {
    if (tool.executor !== 'server') throw new Error(`tool ${tool.name} is executed by the ${tool.executor}, not the worker`);
    if (tool.source === HARNESS_SOURCE) throw new Error(`tool ${tool.name} runs in the session's workspace, not through the catalog`);
    if (tool.source === 'builtin' && tool.name === 'web_search') return this.webSearch.run(args as Record<string, unknown>, ctx.signal);
    if (tool.source === 'builtin') return executeBuiltin(tool.name, args as Record<string, unknown>, ctx, this.calculator, this.files);
    const label = tool.source.startsWith(MCP_SOURCE) ? tool.source.slice(MCP_SOURCE.length) : undefined;
    const decl = declarations.find((d): d is McpToolDeclaration => d.type === 'mcp' && d.server_label === label);
    if (!decl) throw new Error(`no declaration for the source ${tool.source} of tool ${tool.name}`);
    return this.connector.callTool(decl, tool.remoteName ?? tool.name, args, ctx);
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
            sideEffects: true,
            source: 'client',
          },
        ];
      case 'builtin': {
        if (!isBuiltinToolName(decl.name)) return [];
        // Saved while a provider was configured, and none is now: not offered (the definition stays valid).
        if (decl.name === 'web_search' && !this.webSearch.enabled) return [];
        const def = BUILTIN_TOOLS[decl.name];
        return [
          {
            name: def.name,
            description: def.description,
            parameters: decl.name === 'web_search' ? webSearchParameters(this.webSearch.maxResults) : def.parameters,
            executor: def.executor,
            requiresApproval: decl.requires_approval ?? false,
            idempotent: decl.idempotent ?? true,
            sideEffects: def.sideEffects,
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
              remoteName: t.name,
              description: t.description,
              parameters: t.inputSchema,
              executor: 'server' as const,
              requiresApproval: decl.requires_approval ?? false,
              idempotent: decl.idempotent ?? false,
              // Nothing says what a server's tool does: it may change something, idempotent or not.
              sideEffects: true,
              source: `${MCP_SOURCE}${decl.server_label}`,
            }))
        );
      }
    }
  }
}

/** Separates a server's label from its tool's name in an offered name. */
const LABEL_SEPARATOR = '__';
const MAX_TOOL_NAME = 64;
const HASH_CHARS = 8;

/**
 * The names tools are offered by: unique across MCP servers. An MCP tool keeps its own name unless
 * another MCP server also offers it, or it is the name of a declared builtin or client function or
 * of a coordination tool (or of a harness tool, `alsoReserved`, in a session with an
 * environment); then it is `<server_label>__<name>` (cut to 64 characters with a short
 * hash of both when longer), and `remoteName` keeps what its server calls it. The result depends
 * only on the declarations and the servers' listings, never on which listing answered first: the
 * runs of a turn offer the same names, and the calls they recorded match them.
 */
export function offeredNames(tools: readonly ResolvedTool[], alsoReserved: readonly string[] = []): ResolvedTool[] {
  const isMcp = (tool: ResolvedTool): boolean => tool.source.startsWith(MCP_SOURCE);
  const reserved = new Set<string>([...tools.filter((t) => !isMcp(t)).map((t) => t.name), ...COORDINATION_TOOL_NAMES, ...alsoReserved]);
  const sourcesOf = new Map<string, Set<string>>();
  for (const tool of tools.filter(isMcp)) sourcesOf.set(tool.name, (sourcesOf.get(tool.name) ?? new Set()).add(tool.source));
  return tools.map((tool) => {
    if (!isMcp(tool) || (!reserved.has(tool.name) && sourcesOf.get(tool.name)!.size === 1)) return tool;
    return { ...tool, name: qualifiedName(tool.source.slice(MCP_SOURCE.length), tool.remoteName ?? tool.name) };
  });
}

/** `<label>__<name>`, within the 64 characters model APIs accept (both parts match TOOL_NAME_PATTERN, so it does too). */
function qualifiedName(label: string, name: string): string {
  const full = `${label}${LABEL_SEPARATOR}${name}`;
  if (full.length <= MAX_TOOL_NAME) return full;
  const hash = createHash('sha256').update(`${label}\0${name}`).digest('hex').slice(0, HASH_CHARS);
  return `${full.slice(0, MAX_TOOL_NAME - HASH_CHARS - 1)}_${hash}`;
}
