import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { OAuthError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { isIP } from 'node:net';
import { isOutboundBlocked } from '#libs/outbound';

/** Longest remote text (a tool's own error message) that reaches the model and the session's items. */
export const MAX_REMOTE_TEXT = 500;

/**
 * A failure of the declaration itself, said by this worker (no secret of that name, a value that
 * is not a bearer token): its message is ours, names no remote detail, and reaches the user as is.
 */
export class McpConfigError extends Error {
  override readonly name = 'McpConfigError';
}

// C0 and C1 controls, DEL, and the bidirectional overrides that could make a text read otherwise.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const IPV4 = /\b(?:\d{1,3}\.){3}\d{1,3}\b/g;
// Candidates only: what is masked is what node reads as an IPv6 address. Bounded repetition (45
// characters is the longest IPv6 text form) and one class: linear, whatever the remote sends.
const IPV6 = /\[?[0-9a-f:.]{2,45}\]?/gi;

/**
 * A remote text (an MCP server's error message) as users may read it: control characters
 * dropped, addresses other than the configured host's masked, at most `max` characters. The full
 * text is for the worker's log only.
 */
export function sanitiseRemoteText(text: string, configuredHost: string, max = MAX_REMOTE_TEXT): string {
  const host = configuredHost.replace(/^\[|\]$/g, '').toLowerCase();
  const mask = (match: string) => {
    const address = match.replace(/^\[|\]$/g, '').toLowerCase();
    return isIP(address) === 0 || address === host ? match : '[address]';
  };
  // Cut first: every pass below then reads a few hundred characters, not what the server chose to send.
  const clean = text.slice(0, max * 4).replace(CONTROL, ' ').replace(IPV4, mask).replace(IPV6, mask).replace(/\s+/g, ' ').trim();
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
}

/** A progress message of a server (live on the session's stream): cleaned and cut like its error texts. */
export function remoteProgressMessage(message: string | undefined, configuredUrl: string): string | undefined {
  return message === undefined ? undefined : sanitiseRemoteText(String(message), hostOf(configuredUrl));
}

/**
 * Why a server could not be used, as a short reason users may read: a category and a status or
 * code, never a response body, a remote message or an address the user did not configure.
 * `configuredUrl` is the declaration's `server_url`.
 */
export function unavailableReason(error: unknown, configuredUrl: string): string {
  const chain = causes(error);
  const configured = hostOf(configuredUrl);
  if (chain.some(isOutboundBlocked)) {
    const blocked = chain.find((e) => typeof (e as { hostname?: unknown }).hostname === 'string') as { hostname?: string } | undefined;
    const named = blocked?.hostname ?? addressIn(chain);
    return named === undefined || named.toLowerCase() === configured
      ? `the address of ${configured} is not allowed (private, loopback, link-local or reserved addresses are refused)`
      : 'an address the server named (OAuth metadata or token endpoint) is not allowed (private, loopback, link-local or reserved addresses are refused)';
  }
  for (const e of chain) {
    if (e instanceof McpConfigError) return e.message;
    if (e instanceof StreamableHTTPError && typeof e.code === 'number' && e.code > 0) return `the server answered HTTP ${e.code}`;
    if (e instanceof OAuthError) return `the authorization server refused the request (${sanitiseRemoteText((e as OAuthError & { errorCode?: string }).errorCode ?? 'error', configured, 64)})`;
    if (e instanceof UnauthorizedError) return 'the server refused the credentials (HTTP 401)';
    if (e instanceof McpError) return `the server answered an MCP error (code ${e.code})`;
  }
  const code = chain.map((e) => (e as { code?: unknown }).code).find((c): c is string => typeof c === 'string' && /^[A-Z][A-Z0-9_]{2,40}$/.test(c));
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `the host ${configured} cannot be resolved`;
  if (code) return `the connection failed (${code})`;
  return 'the server could not be reached or did not answer as an MCP server';
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let current = error; current !== undefined && current !== null && chain.length < 6; current = (current as { cause?: unknown }).cause) chain.push(current);
  return chain;
}

function addressIn(chain: unknown[]): string | undefined {
  for (const e of chain) {
    const match = e instanceof Error ? /the address (?:of )?(\S+?)[: ]/.exec(e.message) : null;
    if (match) return match[1].replace(/^\[|\]$/g, '');
  }
  return undefined;
}

function hostOf(raw: string): string {
  try {
    return new URL(raw).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return '';
  }
}
