import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import * as z from 'zod';

/**
 * An MCP server that requires a bearer token, with what the MCP authorization spec puts around it:
 * a 401 with `WWW-Authenticate: Bearer resource_metadata=…`, protected resource metadata
 * (RFC 9728) at the path-aware well-known URL, and an authorization server on the same origin
 * (RFC 8414 metadata, a client_credentials token endpoint taking client_secret_basic). The test
 * decides which tokens and which client secret are good, and reads what arrived.
 */
export interface AuthMcpServer {
  /** The MCP endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** The authorization server's issuer (this server's origin). */
  issuer: string;
  /** Bearer tokens /mcp accepts besides the ones the token endpoint issued. */
  acceptedTokens: Set<string>;
  /** The one client the token endpoint knows. */
  client: { id: string; secret: string };
  /** The `Authorization` header of every /mcp request, in arrival order (undefined: none). */
  mcpAuthorizations: (string | undefined)[];
  /** Each token request: who authenticated how, for which resource and scope, and the answer. */
  tokenRequests: { clientId: string | undefined; grantType: string | null; resource: string | null; scope: string | null; status: number }[];
  /** Paths of the metadata documents fetched (discovery). */
  metadataRequests: string[];
  /** Makes every token issued so far invalid (the next /mcp request with one gets 401). */
  revokeIssued(): void;
  close(): Promise<void>;
}

export async function startAuthMcpServer(options: { scopesSupported?: string[] } = {}): Promise<AuthMcpServer> {
  const sockets = new Set<Socket>();
  const issued = new Set<string>();
  let origin = '';
  const state: Omit<AuthMcpServer, 'url' | 'issuer' | 'revokeIssued' | 'close'> = {
    acceptedTokens: new Set(),
    client: { id: 'agent-client', secret: 'client-secret-1' },
    mcpAuthorizations: [],
    tokenRequests: [],
    metadataRequests: [],
  };

  function mcpServer(): McpServer {
    const server = new McpServer({ name: 'auth-test-server', version: '1.0.0' });
    server.registerTool('add', { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async (args) => ({
      content: [{ type: 'text', text: String(args.a + args.b) }],
    }));
    return server;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = req.url?.split('?')[0] ?? '';
    if (path.startsWith('/.well-known/')) {
      state.metadataRequests.push(path);
      if (path === '/.well-known/oauth-protected-resource/mcp') {
        return json(res, 200, { resource: `${origin}/mcp`, authorization_servers: [origin], ...(options.scopesSupported ? { scopes_supported: options.scopesSupported } : {}) });
      }
      if (path === '/.well-known/oauth-authorization-server') {
        return json(res, 200, {
          issuer: origin,
          authorization_endpoint: `${origin}/authorize`,
          token_endpoint: `${origin}/token`,
          response_types_supported: ['token'],
          grant_types_supported: ['client_credentials'],
          token_endpoint_auth_methods_supported: ['client_secret_basic'],
        });
      }
      return void res.writeHead(404).end();
    }
    if (path === '/token' && req.method === 'POST') return token(req, res);
    if (path !== '/mcp') return void res.writeHead(404).end();
    const authorization = req.headers.authorization;
    state.mcpAuthorizations.push(authorization);
    const presented = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    if (!presented || !(state.acceptedTokens.has(presented) || issued.has(presented))) {
      res.writeHead(401, { 'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"` });
      return void res.end('unauthorized');
    }
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

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [clientId, clientSecret] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':').map(decodeURIComponent) : [undefined, undefined];
    const record = { clientId, grantType: form.get('grant_type'), resource: form.get('resource'), scope: form.get('scope'), status: 200 };
    state.tokenRequests.push(record);
    if (clientId !== state.client.id || clientSecret !== state.client.secret) {
      record.status = 401;
      return json(res, 401, { error: 'invalid_client' });
    }
    if (record.grantType !== 'client_credentials') {
      record.status = 400;
      return json(res, 400, { error: 'unsupported_grant_type' });
    }
    const accessToken = `at-${randomUUID()}`;
    issued.add(accessToken);
    return json(res, 200, { access_token: accessToken, token_type: 'Bearer', expires_in: 3600 });
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
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  return Object.assign(state, {
    url: `${origin}/mcp`,
    issuer: origin,
    revokeIssued: () => issued.clear(),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
}
