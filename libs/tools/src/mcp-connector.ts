import { Injectable, Logger } from '@nestjs/common';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { CallToolResultSchema, ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation/types.js';
import { AppConfig } from '#libs/config';
import { raceAbort } from './abort.js';
import { ToolSourceError } from './errors.js';
import { outcomeOf } from './mcp/results.js';
import { CallDeadline } from './mcp/call-deadline.js';
import { remoteProgressMessage, sanitiseRemoteText, unavailableReason } from './mcp/remote-errors.js';
import { McpSessionPool } from './mcp/session-pool.js';
import type { McpToolDeclaration, ToolCallContext, ToolOutcome } from './tool.types.js';
import { LinearSchemaValidator } from './schema-cache.js';

export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  /** The JSON Schema a successful call's `structuredContent` must match, when the tool declares one. */
  outputSchema?: Record<string, unknown>;
}

const LIST_CACHE_MS = 60_000;
const MAX_LIST_PAGES = 20;
const BACKSTOP_MARGIN_MS = 60_000;
// JSON-RPC errors a server answers about the call itself (unknown tool, bad arguments, a crash in
// the tool): the tool failed, the server is fine, and the model should read why.
const CALL_ERROR_CODES = new Set<number>([ErrorCode.InvalidParams, ErrorCode.MethodNotFound, ErrorCode.InvalidRequest, ErrorCode.InternalError]);

/**
 * Talks to MCP servers over Streamable HTTP through the worker's session pool: a call or a listing
 * reuses an open MCP session of its server (one `initialize` for many calls), and a server that
 * restarted gets a fresh session without the call being lost or run twice.
 */
@Injectable()
export class McpConnector {
  private readonly lists = new Map<string, { expires: number; tools: Promise<McpToolInfo[]> }>();
  private readonly validator = new LinearSchemaValidator();
  private readonly logger = new Logger(McpConnector.name);

  constructor(
    private readonly config: AppConfig,
    private readonly pool: McpSessionPool,
  ) {
    // A server that says its tools changed is listed afresh by the next turn.
    pool.onListChanged((key) => this.lists.delete(key));
  }

  /** The server's tools (narrowed to `allowed_tools`), cached per server and credentials until they change (or 60 s). */
  async listTools(decl: McpToolDeclaration, signal?: AbortSignal): Promise<McpToolInfo[]> {
    const tools = await raceAbort(this.listing(decl).tools, signal);
    const allowed = decl.allowed_tools;
    return allowed ? tools.filter((t) => allowed.includes(t.name)) : tools;
  }

  /**
   * Calls one tool. The idempotency key travels both as the `Idempotency-Key` header (the session
   * sends it with every request while the call is in flight) and as `_meta.idempotency_key`, so a
   * server can honour it at either layer. A `structuredContent`
   * that does not match the tool's `outputSchema` is a failed call, as the spec asks.
   */
  async callTool(decl: McpToolDeclaration, name: string, args: object, ctx: ToolCallContext): Promise<ToolOutcome> {
    // TOOL_TIMEOUT_MS counts while the server works, not while it waits for the user (elicitation):
    // the SDK's own timeout is only a backstop.
    const deadline = new CallDeadline(this.config.toolTimeoutMs);
    // The SDK's own timeout is a backstop behind it: the call's time plus the longest wait for a user.
    const backstop = this.config.toolTimeoutMs + this.config.mcpElicitationTimeoutMs + BACKSTOP_MARGIN_MS;
    const options: RequestOptions = { signal: AbortSignal.any([ctx.signal, deadline.signal]), timeout: backstop };
    const onprogress = ctx.onProgress;
    const callOptions: RequestOptions = onprogress ? { ...options, onprogress: (p) => onprogress({ progress: p.progress, total: p.total, message: remoteProgressMessage(p.message, decl.server_url) }) } : options;
    const listed = this.lists.get(this.pool.keyOf(decl));
    try {
      return await this.guard(decl, ctx.signal, deadline.signal, () =>
        this.pool.use(decl, options, async (session) => {
          session.call = ctx;
          session.deadline = deadline;
          let result: CallToolResult;
          try {
            const params = { name, arguments: args as Record<string, unknown>, _meta: { idempotency_key: ctx.idempotencyKey } };
            result = (await session.client.request({ method: 'tools/call', params }, CallToolResultSchema, callOptions)) as CallToolResult;
          } catch (err) {
            // The server's own text, cut and cleaned for the model and the session's items (remote-errors.ts).
            if (err instanceof McpError && CALL_ERROR_CODES.has(err.code)) {
              const output = sanitiseRemoteText(err.message, new URL(decl.server_url).hostname);
              if (output !== err.message) this.logger.warn(`MCP server "${decl.server_label}" tool ${name} failed: ${err.message}`);
              return { success: false, output };
            }
            // The session ended with the call sent (the server restarted, the stream broke for good).
            if (err instanceof McpError && err.code === ErrorCode.ConnectionClosed && !ctx.signal.aborted) {
              throw new ToolSourceError('outcome_unknown', `the session with MCP server "${decl.server_label}" ended during the call; it may or may not have taken effect`, { cause: err });
            }
            throw err;
          }
          const mismatch = await this.outputMismatch(listed, name, result);
          if (mismatch) return { success: false, output: `output_schema_mismatch: ${mismatch}` };
          return outcomeOf(result);
        }, ctx.sessionId),
      );
    } finally {
      deadline.stop();
    }
  }

  private listing(decl: McpToolDeclaration): { expires: number; tools: Promise<McpToolInfo[]> } {
    const key = this.pool.keyOf(decl);
    const now = Date.now();
    const entry = this.lists.get(key);
    if (entry && entry.expires > now) return entry;
    for (const [k, e] of this.lists) if (e.expires <= now) this.lists.delete(k);
    // Shared by every caller until it expires, so it runs under no caller's signal, only the timeout.
    const created = { expires: now + LIST_CACHE_MS, tools: this.fetchTools(decl) };
    created.tools.catch(() => {
      if (this.lists.get(key) === created) this.lists.delete(key);
    });
    this.lists.set(key, created);
    return created;
  }

  private fetchTools(decl: McpToolDeclaration): Promise<McpToolInfo[]> {
    const { options, deadline } = this.options(undefined);
    return this.guard(decl, undefined, deadline, () =>
      this.pool.use(decl, options, async (session) => {
        const tools: McpToolInfo[] = [];
        let cursor: string | undefined;
        for (let page = 0; page < MAX_LIST_PAGES; page++) {
          const result = await session.client.listTools(cursor ? { cursor } : undefined, options);
          for (const t of result.tools) {
            tools.push({
              name: t.name,
              description: t.description ?? t.title ?? '',
              inputSchema: t.inputSchema as Record<string, unknown>,
              outputSchema: t.outputSchema as Record<string, unknown> | undefined,
            });
          }
          cursor = result.nextCursor;
          if (!cursor) break;
        }
        return tools;
      }),
    );
  }

  /** Why a result's structured content does not match the listed output schema (null: it does, or there is none). */
  private async outputMismatch(listed: { tools: Promise<McpToolInfo[]> } | undefined, name: string, result: CallToolResult): Promise<string | null> {
    if (result.isError || !listed) return null;
    const tool = (await listed.tools.catch(() => [] as McpToolInfo[])).find((t) => t.name === name);
    if (!tool?.outputSchema) return null;
    if (result.structuredContent === undefined) return `tool ${name} declares an output schema but returned no structured content`;
    const check = this.validator.getValidator(tool.outputSchema as JsonSchemaType)(result.structuredContent);
    return check.valid ? null : (check.errorMessage ?? 'structured content does not match the output schema');
  }

  /** A listing's bound: TOOL_TIMEOUT_MS in all. */
  private options(signal: AbortSignal | undefined): { options: RequestOptions; deadline: AbortSignal } {
    const timeout = this.config.toolTimeoutMs;
    const deadline = AbortSignal.timeout(timeout);
    return { options: { signal: signal ? AbortSignal.any([signal, deadline]) : deadline, timeout, maxTotalTimeout: timeout }, deadline };
  }

  /** Failures become ToolSourceError (tool_server_unavailable); the caller's own abort is handed back untouched. */
  private async guard<T>(decl: McpToolDeclaration, signal: AbortSignal | undefined, deadline: AbortSignal, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      if (err instanceof ToolSourceError) throw err;
      // Users read a short reason (remote-errors.ts); the worker's log keeps the whole text.
      const reason = deadline.aborted ? `no answer within ${this.config.toolTimeoutMs} ms` : unavailableReason(err, decl.server_url);
      if (!deadline.aborted) this.logger.warn(`MCP server "${decl.server_label}" (${new URL(decl.server_url).host}) unavailable: ${describe(err)}`);
      throw new ToolSourceError('tool_server_unavailable', `MCP server "${decl.server_label}" unavailable: ${reason}`, { cause: err });
    }
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${err.message}${cause}`;
}
