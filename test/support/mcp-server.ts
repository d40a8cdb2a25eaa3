import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';

/**
 * A real MCP server (the sdk's McpServer over Streamable HTTP, stateless) for tests of MCP tools:
 * what the worker sends is observable on the wire, including the idempotency key at both layers.
 */
export interface McpCall {
  tool: string;
  args: Record<string, unknown>;
  /** `_meta.idempotency_key` of the request. */
  metaKey: string | undefined;
  /** The `Idempotency-Key` HTTP header of the request. */
  headerKey: string | undefined;
  /** The W3C `traceparent` header of the request: present only when the caller traces. */
  traceparent?: string;
}

export interface TestMcpServer {
  /** The endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** Every tools/call received, in arrival order (before the tool runs). */
  calls: McpCall[];
  /**
   * Side effects `record_side_effect` performed, one per idempotency key: a repeated key gets the
   * first call's answer without recording again, as a tool honouring the key would.
   */
  effects: { note: string; key: string | undefined }[];
  /** Lets the `hold` calls with this note return (they wait until then, or until close). */
  release(note: string): void;
  close(): Promise<void>;
}

export interface McpServerOptions {
  /** `[name, value]`: requests without this header get 401. */
  requiredHeader?: [string, string];
  /** 0 (default): a random free port. */
  port?: number;
}

export async function startMcpServer(options: McpServerOptions = {}): Promise<TestMcpServer> {
  const calls: McpCall[] = [];
  const effects: TestMcpServer['effects'] = [];
  const byKey = new Map<string, Promise<CallToolResult>>();
  const sockets = new Set<Socket>();
  // Ends pending delays on close, so a test never waits for (or leaks) a sleeping tool.
  const closing = new AbortController();
  const holds = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  const hold = (note: string): { promise: Promise<void>; resolve: () => void } => {
    let entry = holds.get(note);
    if (!entry) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((done) => {
        resolve = done;
        closing.signal.addEventListener('abort', () => done(), { once: true });
      });
      entry = { promise, resolve };
      holds.set(note, entry);
    }
    return entry;
  };

  function mcpServer(): McpServer {
    const server = new McpServer({ name: 'test-mcp-server', version: '1.0.0' });
    const received = (tool: string, args: Record<string, unknown>, extra: { _meta?: Record<string, unknown>; requestInfo?: { headers: Record<string, string | string[] | undefined> } }) => {
      const metaKey = typeof extra._meta?.idempotency_key === 'string' ? extra._meta.idempotency_key : undefined;
      const header = extra.requestInfo?.headers['idempotency-key'];
      const headerKey = Array.isArray(header) ? header[0] : header;
      const traceHeader = extra.requestInfo?.headers.traceparent;
      const traceparent = Array.isArray(traceHeader) ? traceHeader[0] : traceHeader;
      calls.push({ tool, args, metaKey, headerKey, ...(traceparent ? { traceparent } : {}) });
      return metaKey ?? headerKey;
    };
    server.registerTool(
      'add',
      { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() } },
      async (args, extra) => {
        received('add', args, extra);
        return text(String(args.a + args.b));
      },
    );
    server.registerTool(
      'record_side_effect',
      {
        description: 'Record a note (a side effect), after an optional delay.',
        inputSchema: { note: z.string(), delay_ms: z.number().int().min(0).optional() },
      },
      async (args, extra) => {
        const key = received('record_side_effect', args, extra);
        const effect = async (): Promise<CallToolResult> => {
          if (args.delay_ms) await sleep(args.delay_ms, undefined, { signal: closing.signal });
          effects.push({ note: args.note, key });
          return text(`recorded ${args.note}`);
        };
        if (key === undefined) return effect();
        if (!byKey.has(key)) byKey.set(key, effect());
        return byKey.get(key)!;
      },
    );
    server.registerTool(
      'hold',
      { description: 'Return once the test releases the note.', inputSchema: { note: z.string() } },
      async (args, extra) => {
        received('hold', args, extra);
        await hold(args.note).promise;
        return text(`released ${args.note}`);
      },
    );
    server.registerTool('fail_always', { description: 'Always fails.', inputSchema: {} }, async (args, extra) => {
      received('fail_always', args, extra);
      return { content: [{ type: 'text', text: 'boom' }], isError: true };
    });
    return server;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.url?.split('?')[0] !== '/mcp') return void res.writeHead(404).end();
    const required = options.requiredHeader;
    if (required && req.headers[required[0].toLowerCase()] !== required[1]) return void res.writeHead(401).end('unauthorized');
    // Stateless: no sessions, so no GET stream and nothing to DELETE.
    if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end();
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  http.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    effects,
    release: (note) => hold(note).resolve(),
    close: async () => {
      closing.abort();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

function text(value: string): CallToolResult {
  return { content: [{ type: 'text', text: value }] };
}
