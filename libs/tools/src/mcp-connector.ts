import { Injectable } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AppConfig } from '#libs/config';
import { raceAbort } from './abort.js';
import { ToolSourceError } from './errors.js';
import { credentialsKey, McpAuth } from './mcp/auth.js';
import { outcomeOf } from './mcp/results.js';
import type { McpToolDeclaration, ToolCallContext, ToolOutcome } from './tool.types.js';

export interface McpToolInfo {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

const LIST_CACHE_MS = 60_000;
const MAX_LIST_PAGES = 20;
// JSON-RPC errors a server answers about the call itself (unknown tool, bad arguments, a crash in
// the tool): the tool failed, the server is fine, and the model should read why.
const CALL_ERROR_CODES = new Set<number>([ErrorCode.InvalidParams, ErrorCode.MethodNotFound, ErrorCode.InvalidRequest, ErrorCode.InternalError]);

/**
 * Talks to MCP servers over Streamable HTTP. Each operation opens its own client and closes it
 * when done: nothing stays open between calls, and a server that restarts costs nothing.
 */
@Injectable()
export class McpConnector {
  private readonly lists = new Map<string, { expires: number; tools: Promise<McpToolInfo[]> }>();

  constructor(
    private readonly config: AppConfig,
    private readonly auth: McpAuth,
  ) {}

  /** The server's tools (narrowed to `allowed_tools`), cached per server URL and headers. */
  async listTools(decl: McpToolDeclaration, signal?: AbortSignal): Promise<McpToolInfo[]> {
    const key = credentialsKey(decl);
    const now = Date.now();
    let entry = this.lists.get(key);
    if (!entry || entry.expires <= now) {
      for (const [k, e] of this.lists) if (e.expires <= now) this.lists.delete(k);
      // Shared by every caller until it expires, so it runs under no caller's signal, only the timeout.
      const created = { expires: now + LIST_CACHE_MS, tools: this.fetchTools(decl) };
      created.tools.catch(() => {
        if (this.lists.get(key) === created) this.lists.delete(key);
      });
      this.lists.set(key, created);
      entry = created;
    }
    const tools = await raceAbort(entry.tools, signal);
    const allowed = decl.allowed_tools;
    return allowed ? tools.filter((t) => allowed.includes(t.name)) : tools;
  }

  /**
   * Calls one tool. The idempotency key travels both as the `Idempotency-Key` header and as
   * `_meta.idempotency_key`, so a server can honour it at either layer.
   */
  callTool(decl: McpToolDeclaration, name: string, args: object, ctx: ToolCallContext): Promise<ToolOutcome> {
    return this.withClient(decl, { 'Idempotency-Key': ctx.idempotencyKey }, ctx.signal, async (client, options) => {
      let result: CallToolResult;
      try {
        const params = { name, arguments: args as Record<string, unknown>, _meta: { idempotency_key: ctx.idempotencyKey } };
        const onprogress = ctx.onProgress;
        const callOptions: RequestOptions = onprogress ? { ...options, onprogress: (p) => onprogress({ progress: p.progress, total: p.total, message: p.message }), resetTimeoutOnProgress: true } : options;
        result = (await client.callTool(params, undefined, callOptions)) as CallToolResult;
      } catch (err) {
        if (err instanceof McpError && CALL_ERROR_CODES.has(err.code)) return { success: false, output: err.message };
        throw err;
      }
      return outcomeOf(result);
    });
  }

  private fetchTools(decl: McpToolDeclaration): Promise<McpToolInfo[]> {
    return this.withClient(decl, {}, undefined, async (client, options) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await client.listTools(cursor ? { cursor } : undefined, options);
        for (const t of result.tools) {
          tools.push({ name: t.name, description: t.description ?? t.title ?? '', inputSchema: t.inputSchema as Record<string, unknown> });
        }
        cursor = result.nextCursor;
        if (!cursor) break;
      }
      return tools;
    });
  }

  private async withClient<T>(
    decl: McpToolDeclaration,
    extraHeaders: Record<string, string>,
    signal: AbortSignal | undefined,
    work: (client: Client, options: RequestOptions) => Promise<T>,
  ): Promise<T> {
    const timeout = this.config.toolTimeoutMs;
    const deadline = AbortSignal.timeout(timeout);
    const options: RequestOptions = { signal: signal ? AbortSignal.any([signal, deadline]) : deadline, timeout, maxTotalTimeout: timeout };
    const transport = new StreamableHTTPClientTransport(new URL(decl.server_url), {
      requestInit: { headers: { ...decl.headers, ...extraHeaders } },
      ...this.auth.transportOptions(decl),
    });
    const client = new Client({ name: 'yuxi-agents-worker', version: '1.0.0' });
    try {
      await client.connect(transport, options);
      return await work(client, options);
    } catch (err) {
      // The caller's own abort is not the server's fault: hand back the caller's reason untouched.
      if (signal?.aborted) throw signal.reason;
      const reason = deadline.aborted ? `no answer within ${timeout} ms` : describe(err);
      throw new ToolSourceError('tool_server_unavailable', `MCP server "${decl.server_label}" unavailable: ${reason}`, { cause: err });
    } finally {
      await client.close().catch(() => undefined);
    }
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? ` (${err.cause.message})` : '';
  return `${err.message}${cause}`;
}
