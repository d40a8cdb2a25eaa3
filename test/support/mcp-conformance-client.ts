// The worker's MCP client (McpConnector with McpAuth) as a client under test of
// @modelcontextprotocol/conformance: `conformance client --command "node <this file>"` runs it with
// the scenario's server URL as its last argument and MCP_CONFORMANCE_CONTEXT (the pre-registered
// client's id and secret, for the client credentials scenarios). It lists the server's tools and
// calls the first, authenticating as an agent's `oauth_client_credentials` auth would, its secret
// coming from an in-memory store instead of Postgres. Exits 1 on any failure.
import { discoverOAuthServerInfo, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { AppConfig } from '#libs/config';
import type { SecretsStore } from '#libs/secrets';
import { McpAuth, McpConnector, McpSessionPool, type McpToolDeclaration } from '#libs/tools';

const serverUrl = process.argv.at(-1) ?? '';
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as { client_id?: string; client_secret?: string };

/**
 * The authorization server an administrator would name as `issuer`: the one the server's protected
 * resource metadata advertises (found as a client finds it, from the 401's WWW-Authenticate).
 */
async function advertisedIssuer(): Promise<string> {
  const probe = await fetch(serverUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }),
  });
  await probe.body?.cancel();
  const { resourceMetadataUrl } = extractWWWAuthenticateParams(probe);
  const info = await discoverOAuthServerInfo(serverUrl, { resourceMetadataUrl });
  return String(info.authorizationServerUrl);
}

async function main(): Promise<void> {
  if (!context.client_id || !context.client_secret) throw new Error('this client authenticates with pre-registered client credentials only (no context given)');
  const secret = context.client_secret;
  const config = new AppConfig({ DATABASE_URL: 'unused', REDIS_URL: 'unused', TOOL_TIMEOUT_MS: '20000' });
  const store = { resolve: () => Promise.resolve({ value: secret, version: 1 }) } as unknown as SecretsStore;
  const connector = new McpConnector(config, new McpSessionPool(config, new McpAuth(store)));
  const decl: McpToolDeclaration = {
    type: 'mcp',
    server_label: 'conformance',
    server_url: serverUrl,
    auth: { type: 'oauth_client_credentials', secret: 'conformance', client_id: context.client_id, issuer: await advertisedIssuer() },
    secrets_owner_id: null,
  };
  const tools = await connector.listTools(decl);
  const first = tools[0];
  if (first) {
    const outcome = await connector.callTool(decl, first.name, {}, { idempotencyKey: 'conformance:1', signal: AbortSignal.timeout(20_000), sessionId: 'conformance' });
    console.log(`${first.name}: ${outcome.success ? 'ok' : 'failed'}`);
  }
  console.log(`listed ${tools.length} tool(s)`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
