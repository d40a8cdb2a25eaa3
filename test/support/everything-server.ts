import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The MCP project's reference server, `@modelcontextprotocol/server-everything` (a dev
 * dependency), run as its own process over Streamable HTTP, behind a small HTTP proxy of ours
 * that reads every JSON-RPC message the client sends. The proxy is how a test counts what no
 * server exposes: how many `initialize` handshakes a worker made, whether `notifications/cancelled`
 * reached the server. The server keeps its MCP sessions in memory: `restart()` forgets them all
 * (a kill and a fresh process on the same port), as a deploy of the server would.
 */
export interface EverythingServer {
  /** The endpoint the agent declares: the proxy's `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** Every JSON-RPC message the client sent (requests, notifications and responses), in order. */
  messages: SentMessage[];
  /** How many messages of this method the client sent (`initialize`, `tools/call`, …). */
  count(method: string): number;
  /** The `Mcp-Session-Id` headers seen on requests, distinct, in order of first use. */
  sessionIds(): string[];
  /** Kills the server (only the pid this harness started) and starts a fresh one on the same port. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface SentMessage {
  /** Absent for a response (the client answering a server's request, e.g. an elicitation). */
  method?: string;
  id?: string | number;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  sessionId: string | undefined;
  httpMethod: string;
}

const require = createRequire(import.meta.url);
const SERVER_ENTRY = path.join(path.dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist', 'index.js');
const START_TIMEOUT_MS = 15_000;

export async function startEverythingServer(): Promise<EverythingServer> {
  const upstreamPort = await freePort();
  let child = await spawnServer(upstreamPort);
  const messages: SentMessage[] = [];
  const sockets = new Set<Socket>();

  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      record(req, body, messages);
      const upstream = httpRequest(
        { host: '127.0.0.1', port: upstreamPort, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end('upstream unavailable');
      });
      // A client that goes away (a cancelled call's stream) ends the upstream request too.
      res.on('close', () => upstream.destroy());
      upstream.end(body);
    });
  });
  proxy.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    messages,
    count: (method) => messages.filter((m) => m.method === method).length,
    sessionIds: () => [...new Set(messages.map((m) => m.sessionId).filter((id): id is string => id !== undefined))],
    async restart() {
      await stop(child);
      child = await spawnServer(upstreamPort);
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await stop(child);
    },
  };
}

function record(req: IncomingMessage, body: Buffer, messages: SentMessage[]): void {
  if (req.method !== 'POST' || body.length === 0) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return;
  }
  const sessionId = typeof req.headers['mcp-session-id'] === 'string' ? req.headers['mcp-session-id'] : undefined;
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    if (typeof message !== 'object' || message === null) continue;
    const { method, id, params, result } = message as SentMessage;
    messages.push({ method, id, params, result, sessionId, httpMethod: req.method });
  }
}

/** Starts the server on `port` and resolves once it says it listens (on stderr), bounded in time. */
async function spawnServer(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [SERVER_ENTRY, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not start within ${START_TIMEOUT_MS} ms: ${output}`)), START_TIMEOUT_MS);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (/listening on port/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server-everything exited (${code}) before listening: ${output}`));
    });
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
