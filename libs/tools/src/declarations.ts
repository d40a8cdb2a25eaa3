import { BUILTIN_TOOL_NAMES, type BuiltinToolName } from './builtin-tools.js';
import { compileSchema } from './schema-cache.js';
import type { BuiltinToolDeclaration, FunctionToolDeclaration, McpAuthReference, McpToolDeclaration, ToolDeclaration } from './tool.types.js';

/** What model APIs accept as a function name (OpenAI's rule), used for tool names and MCP labels. */
export const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;
export const MAX_TOOLS = 64;
/**
 * How a saved MCP credential (a header value, a URL's user info or query value) is shown when an
 * agent is read. Never accepted back as a value: saving a definition read from the API unchanged
 * would otherwise replace the real credential with these three characters.
 */
export const REDACTED_SECRET = '***';
const MAX_DESCRIPTION = 1024;
const MAX_HEADERS = 32;
const MAX_ALLOWED_TOOLS = 256;
const MAX_URL = 2048;
// RFC 9110 token: anything else makes fetch throw at call time instead of at save time.
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;
// The MCP transport and the idempotency contract own these; an agent overriding them would break calls.
const RESERVED_HEADERS = new Set(['content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'idempotency-key', 'content-length', 'host']);

const FIELDS: Record<ToolDeclaration['type'], readonly string[]> = {
  function: ['type', 'name', 'description', 'parameters'],
  builtin: ['type', 'name', 'requires_approval', 'idempotent'],
  mcp: ['type', 'server_label', 'server_url', 'headers', 'allowed_tools', 'requires_approval', 'idempotent', 'auth', 'sampling'],
};
const AUTH_FIELDS: Record<McpAuthReference['type'], readonly string[]> = {
  bearer: ['type', 'secret'],
  oauth_client_credentials: ['type', 'secret', 'client_id', 'issuer', 'scope'],
};
/** libs/secrets' rule for a secret's name (this lib does not import it: names are checked where they are written). */
const SECRET_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
// RFC 6749 client_id and scope characters (printable ASCII; scope tokens separated by spaces).
const CLIENT_ID = /^[\x20-\x7e]{1,256}$/;
const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;

type Entry = Record<string, unknown>;

/**
 * Validates and normalizes an agent's `tools` (admin PUT). Every problem is reported, each with
 * its path (`tools[2].server_url: …`), so an admin can fix a whole declaration in one round.
 */
export function parseToolDeclarations(raw: unknown): { tools: ToolDeclaration[]; errors: string[] } {
  const errors: string[] = [];
  if (!Array.isArray(raw)) return { tools: [], errors: ['tools: must be an array'] };
  if (raw.length > MAX_TOOLS) errors.push(`tools: at most ${MAX_TOOLS} tools, got ${raw.length}`);
  const tools: ToolDeclaration[] = [];
  const names = new Set<string>();
  const labels = new Set<string>();
  raw.slice(0, MAX_TOOLS).forEach((item, index) => {
    const path = `tools[${index}]`;
    if (!isRecord(item)) {
      errors.push(`${path}: must be an object`);
      return;
    }
    const type = item.type;
    if (type !== 'function' && type !== 'builtin' && type !== 'mcp') {
      errors.push(`${path}.type: must be one of function, builtin, mcp`);
      return;
    }
    for (const key of Object.keys(item)) {
      if (!FIELDS[type].includes(key)) errors.push(`${path}.${key}: unknown field for a ${type} tool`);
    }
    const before = errors.length;
    const tool = type === 'function' ? parseFunction(item, path, errors) : type === 'builtin' ? parseBuiltin(item, path, errors) : parseMcp(item, path, errors);
    const [key, seen, what] = tool.type === 'mcp' ? [tool.server_label, labels, 'server_label'] : [tool.name, names, 'name'];
    if (key && seen.has(key)) errors.push(`${path}.${what}: duplicate ${what === 'name' ? 'tool name' : what} "${key}"`);
    seen.add(key);
    if (errors.length === before) tools.push(tool);
  });
  // Entries with problems are left out, so `tools` is only safe to save when `errors` is empty.
  return { tools, errors };
}

function parseFunction(item: Entry, path: string, errors: string[]): FunctionToolDeclaration {
  const name = checkName(item.name, `${path}.name`, errors);
  const tool: FunctionToolDeclaration = { type: 'function', name };
  if (item.description !== undefined) {
    if (typeof item.description !== 'string' || item.description.length > MAX_DESCRIPTION) {
      errors.push(`${path}.description: must be a string of at most ${MAX_DESCRIPTION} characters`);
    } else {
      tool.description = item.description;
    }
  }
  tool.parameters = { type: 'object', properties: {} };
  if (item.parameters !== undefined) {
    const problem = schemaProblem(item.parameters);
    if (problem) errors.push(`${path}.parameters: ${problem}`);
    else tool.parameters = item.parameters as Record<string, unknown>;
  }
  return tool;
}

function parseBuiltin(item: Entry, path: string, errors: string[]): BuiltinToolDeclaration {
  const name = typeof item.name === 'string' ? item.name : '';
  if (!(BUILTIN_TOOL_NAMES as readonly string[]).includes(name)) {
    errors.push(`${path}.name: must be one of ${BUILTIN_TOOL_NAMES.join(', ')}`);
  }
  return { type: 'builtin', name: name as BuiltinToolName, ...flags(item, path, errors) };
}

function parseMcp(item: Entry, path: string, errors: string[]): McpToolDeclaration {
  const label = typeof item.server_label === 'string' && TOOL_NAME_PATTERN.test(item.server_label) ? item.server_label : '';
  if (!label) errors.push(`${path}.server_label: must match ${TOOL_NAME_PATTERN}`);
  const url = typeof item.server_url === 'string' ? item.server_url : '';
  if (!isHttpUrl(url)) errors.push(`${path}.server_url: must be an http(s) URL of at most ${MAX_URL} characters`);
  else if (url.includes(REDACTED_SECRET)) errors.push(`${path}.server_url: ${REDACTED_SECRET} is how a saved credential is shown, not its value: type the URL's credentials again`);
  const tool: McpToolDeclaration = { type: 'mcp', server_label: label, server_url: url };
  if (item.headers !== undefined) tool.headers = parseHeaders(item.headers, `${path}.headers`, errors);
  if (item.auth !== undefined) {
    const auth = parseAuth(item.auth, `${path}.auth`, errors);
    if (auth) tool.auth = auth;
    if (Object.keys(tool.headers ?? {}).some((name) => name.toLowerCase() === 'authorization')) {
      errors.push(`${path}.headers.Authorization: the server's credentials come from auth; drop the header or the auth`);
    }
  }
  if (item.sampling !== undefined) {
    if (typeof item.sampling !== 'boolean') errors.push(`${path}.sampling: must be a boolean`);
    else if (item.sampling) tool.sampling = true;
  }
  if (item.allowed_tools !== undefined) {
    if (!Array.isArray(item.allowed_tools) || item.allowed_tools.length > MAX_ALLOWED_TOOLS) {
      errors.push(`${path}.allowed_tools: must be an array of at most ${MAX_ALLOWED_TOOLS} tool names`);
    } else {
      const allowed = item.allowed_tools.map((name, i) => checkName(name, `${path}.allowed_tools[${i}]`, errors));
      tool.allowed_tools = [...new Set(allowed)];
    }
  }
  return { ...tool, ...flags(item, path, errors) };
}

function parseHeaders(raw: unknown, path: string, errors: string[]): Record<string, string> {
  if (!isRecord(raw)) {
    errors.push(`${path}: must be an object of string values`);
    return {};
  }
  const entries = Object.entries(raw);
  if (entries.length > MAX_HEADERS) errors.push(`${path}: at most ${MAX_HEADERS} headers`);
  const headers: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (!HEADER_NAME.test(name)) errors.push(`${path}.${name}: not a valid header name`);
    else if (RESERVED_HEADERS.has(name.toLowerCase())) errors.push(`${path}.${name}: this header is set by the server and cannot be overridden`);
    else if (typeof value !== 'string' || /[\r\n\0]/.test(value) || value.length > 8192) errors.push(`${path}.${name}: must be a single-line string`);
    else if (value === REDACTED_SECRET) errors.push(`${path}.${name}: ${REDACTED_SECRET} is how a saved credential is shown, not its value: type the header's value again`);
    else headers[name] = value;
  }
  return headers;
}

/** A reference to a named secret, never a value: the secret is read when the server is called. */
function parseAuth(raw: unknown, path: string, errors: string[]): McpAuthReference | undefined {
  if (!isRecord(raw) || (raw.type !== 'bearer' && raw.type !== 'oauth_client_credentials')) {
    errors.push(`${path}: must be {"type": "bearer", "secret"} or {"type": "oauth_client_credentials", "secret", "client_id", "issuer", "scope"?}`);
    return undefined;
  }
  const before = errors.length;
  for (const key of Object.keys(raw)) if (!AUTH_FIELDS[raw.type].includes(key)) errors.push(`${path}.${key}: unknown field for ${raw.type} auth`);
  const secret = typeof raw.secret === 'string' && SECRET_NAME.test(raw.secret) ? raw.secret : '';
  if (!secret) errors.push(`${path}.secret: must be the name of a secret (${SECRET_NAME}), not its value`);
  if (raw.type === 'bearer') return errors.length === before ? { type: 'bearer', secret } : undefined;
  const clientId = typeof raw.client_id === 'string' && CLIENT_ID.test(raw.client_id) ? raw.client_id : '';
  if (!clientId) errors.push(`${path}.client_id: must be the OAuth client id (1–256 printable characters)`);
  // Required: client credentials go only to this authorization server, whatever the MCP server advertises.
  const issuer = typeof raw.issuer === 'string' && isHttpUrl(raw.issuer) ? raw.issuer : '';
  if (!issuer) errors.push(`${path}.issuer: must be the http(s) URL of the authorization server the client is registered with`);
  const auth: McpAuthReference = { type: 'oauth_client_credentials', secret, client_id: clientId, issuer };
  if (raw.scope !== undefined) {
    if (typeof raw.scope !== 'string' || raw.scope.length > 1024 || !SCOPE.test(raw.scope)) errors.push(`${path}.scope: must be OAuth scope tokens separated by single spaces`);
    else auth.scope = raw.scope;
  }
  return errors.length === before ? auth : undefined;
}

function flags(item: Entry, path: string, errors: string[]): { requires_approval?: boolean; idempotent?: boolean } {
  const out: { requires_approval?: boolean; idempotent?: boolean } = {};
  for (const key of ['requires_approval', 'idempotent'] as const) {
    if (item[key] === undefined) continue;
    if (typeof item[key] !== 'boolean') errors.push(`${path}.${key}: must be a boolean`);
    else out[key] = item[key];
  }
  return out;
}

function checkName(raw: unknown, path: string, errors: string[]): string {
  if (typeof raw === 'string' && TOOL_NAME_PATTERN.test(raw)) return raw;
  errors.push(`${path}: must match ${TOOL_NAME_PATTERN}`);
  return typeof raw === 'string' ? raw : '';
}

function schemaProblem(schema: unknown): string | undefined {
  if (!isRecord(schema) || schema.type !== 'object') return 'must be a JSON Schema object with "type": "object"';
  try {
    compileSchema(schema);
    return undefined;
  } catch (err) {
    return `invalid JSON Schema: ${(err as Error).message}`;
  }
}

function isHttpUrl(raw: string): boolean {
  if (!raw || raw.length > MAX_URL) return false;
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
