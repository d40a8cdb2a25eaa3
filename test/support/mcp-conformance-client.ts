// The worker's MCP client (McpConnector with McpAuth) as a client under test of
// @modelcontextprotocol/conformance: `conformance client --command "node <this file>"` runs it with
// the scenario's server URL as its last argument and MCP_CONFORMANCE_CONTEXT (the pre-registered
// client's id and secret, for the client credentials scenarios). It lists the server's tools and
// calls each (authenticating, where the context gives credentials, as an agent's
// `oauth_client_credentials` auth would, its secret from an in-memory store instead of Postgres),
// answering an elicitation as the worker converts a user's answer. Exits 1 on any failure.
import { discoverOAuthServerInfo, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { AppConfig } from '#libs/config';
import type { SecretsStore } from '#libs/secrets';
import { ELICITATION_ACTION_QUESTION, elicitationRequest, elicitationResult, McpAuth, McpConnector, McpOutbound, McpSessionPool, type McpToolDeclaration, type ToolCallContext } from '#libs/tools';

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

/** Arguments that fit a tool's input schema: a number, a string or a boolean per property. */
function argumentsFor(schema: Record<string, unknown>): Record<string, unknown> {
  const properties = (schema.properties ?? {}) as Record<string, { type?: string; default?: unknown }>;
  return Object.fromEntries(
    Object.entries(properties).map(([name, field]) => [name, field.default ?? (field.type === 'number' || field.type === 'integer' ? 2 : field.type === 'boolean' ? true : 'conformance')]),
  );
}

/**
 * A worker's call context: a server's elicitation is accepted with no field answered, so every
 * field takes its schema default as the worker's conversion gives it (SEP-1034); sampling is not
 * exercised by the client scenarios.
 */
const callContext = (key: string): ToolCallContext => ({
  idempotencyKey: key,
  signal: AbortSignal.timeout(20_000),
  sessionId: 'conformance',
  elicit: async (params) => {
    const answered = elicitationResult(elicitationRequest('conformance', 'conformance', params), [{ question_id: ELICITATION_ACTION_QUESTION, answer: 'accept' }]);
    if ('errors' in answered) throw new Error(answered.errors.map((e) => `${e.field} ${e.message}`).join('; '));
    return answered.result;
  },
});

/** The scenario's server without auth, or with pre-registered client credentials when the context gives them. */
async function declaration(): Promise<{ decl: McpToolDeclaration; auth: McpAuth }> {
  const secret = context.client_secret;
  const store = { resolve: () => Promise.resolve(secret ? { value: secret, version: 1 } : null) } as unknown as SecretsStore;
  const auth = new McpAuth(store);
  if (!context.client_id || !secret) return { decl: { type: 'mcp', server_label: 'conformance', server_url: serverUrl }, auth };
  const decl: McpToolDeclaration = {
    type: 'mcp',
    server_label: 'conformance',
    server_url: serverUrl,
    auth: { type: 'oauth_client_credentials', secret: 'conformance', client_id: context.client_id, issuer: await advertisedIssuer() },
    secrets_owner_id: null,
  };
  return { decl, auth };
}

/** Lists the server's tools and calls each once, as a worker would for a model that asked. */
async function main(): Promise<void> {
  // The scenario's server listens on loopback: private networks allowed, as npm start does.
  const config = new AppConfig({ DATABASE_URL: 'unused', REDIS_URL: 'unused', TOOL_TIMEOUT_MS: '20000', MCP_ALLOW_PRIVATE_NETWORKS: 'true' });
  const { decl, auth } = await declaration();
  const connector = new McpConnector(config, new McpSessionPool(config, auth, new McpOutbound(config)));
  const tools = await connector.listTools(decl);
  for (const [index, tool] of tools.entries()) {
    const outcome = await connector.callTool(decl, tool.name, argumentsFor(tool.inputSchema), callContext(`conformance:${index}`));
    console.log(`${tool.name}: ${outcome.success ? 'ok' : 'failed'}: ${outcome.output.slice(0, 200)}`);
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
