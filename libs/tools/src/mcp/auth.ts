import { Injectable } from '@nestjs/common';
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type ResolvedSecret, SecretsStore } from '#libs/secrets';
import type { McpAuthReference, McpToolDeclaration } from '../tool.types.js';
import { McpConfigError } from './remote-errors.js';

/**
 * How long a worker reuses a secret it read. A rotation reaches running sessions within this, and
 * at once where the server refuses the old value (a 401 reads the secret again).
 */
export const SECRET_CACHE_MS = 5_000;
/** An access token is dropped this long before it expires, so no request leaves with one about to lapse. */
const TOKEN_EXPIRY_MARGIN_MS = 30_000;
/** Protected resource and authorization server metadata are discovered again after this (or on a refused client). */
const DISCOVERY_CACHE_MS = 10 * 60_000;
/** Entries of each cache before the expired ones are swept (a worker talks to a bounded set of servers). */
const SWEEP_AT = 1_000;

/** What a Streamable HTTP transport needs to authenticate as a declaration says. */
export interface McpTransportAuth {
  /** Bearer tokens: every request reads the secret's current value. */
  fetch?: FetchLike;
  /** OAuth client credentials: the SDK's flow (protected resource metadata discovery, token request, retry on 401). */
  authProvider?: OAuthClientProvider;
}

/** Where a declaration's secret is looked up: its name in its owner's namespace. */
interface SecretRef {
  owner: string | null;
  name: string;
}

/**
 * Credentials of MCP servers from named secrets, resolved when a request is made, never frozen
 * into a session: an agent's declaration holds the secret's name, a session's snapshot whose
 * namespace it is in (`secrets_owner_id`), and this reads the value (cached for SECRET_CACHE_MS)
 * each time the transport sends. One instance per worker: OAuth tokens and discovered metadata are
 * shared by every session of the same server and credentials.
 */
@Injectable()
export class McpAuth {
  private readonly secrets = new Map<string, { expires: number; read: Promise<ResolvedSecret> }>();
  private readonly tokens = new Map<string, { expires: number; tokens: OAuthTokens }>();
  private readonly discovery = new Map<string, { expires: number; state: OAuthDiscoveryState }>();

  constructor(private readonly store: SecretsStore) {}

  /** The transport options for `decl`'s auth; none for a server without one (static headers only). */
  transportOptions(decl: McpToolDeclaration, base: FetchLike = fetch): McpTransportAuth {
    const auth = decl.auth;
    if (!auth) return {};
    // A snapshot always says whose secrets these are; a declaration without it (not from a snapshot)
    // must not fall back to the shared ones, which would hand a private agent the deployment's secrets.
    if (decl.secrets_owner_id === undefined) {
      const refused = new McpConfigError(`no secrets namespace for the auth of MCP server "${decl.server_label}" (not from a session snapshot)`);
      return { fetch: () => Promise.reject(refused) };
    }
    const ref = { owner: decl.secrets_owner_id, name: auth.secret };
    if (auth.type === 'bearer') return { fetch: this.bearerFetch(ref, base) };
    return { authProvider: new SecretClientCredentials(this, ref, auth, decl.server_url) };
  }

  /**
   * The secret's value: from this worker's cache while fresh, else read (`fresh` forces a read:
   * the server refused what the cache held). Rejects when the secret does not exist; the message
   * names the secret, never its value.
   */
  async secret(ref: SecretRef, options: { fresh?: boolean } = {}): Promise<ResolvedSecret> {
    const key = JSON.stringify([ref.owner, ref.name]);
    const now = Date.now();
    const cached = this.secrets.get(key);
    if (cached && cached.expires > now && !options.fresh) return cached.read;
    sweep(this.secrets, now);
    const read = this.store.resolve(ref.owner, ref.name).then((secret) => {
      if (!secret) throw new McpConfigError(`no secret named "${ref.name}" in the ${ref.owner === null ? 'shared secrets' : "agent owner's secrets"}`);
      return secret;
    });
    const entry = { expires: now + SECRET_CACHE_MS, read };
    this.secrets.set(key, entry);
    // A failed read is not kept: the next request reads again.
    read.catch(() => {
      if (this.secrets.get(key) === entry) this.secrets.delete(key);
    });
    return read;
  }

  /** @internal The provider's shared token store. */
  token(key: string): OAuthTokens | undefined {
    const entry = this.tokens.get(key);
    if (!entry) return undefined;
    if (entry.expires <= Date.now()) {
      this.tokens.delete(key);
      return undefined;
    }
    return entry.tokens;
  }

  /** @internal */
  saveToken(key: string, tokens: OAuthTokens): void {
    const now = Date.now();
    sweep(this.tokens, now);
    // No expires_in: kept until the server refuses it (a 401 runs the flow again).
    const lifetime = tokens.expires_in === undefined ? Number.POSITIVE_INFINITY : Math.max(0, tokens.expires_in * 1000 - TOKEN_EXPIRY_MARGIN_MS);
    this.tokens.set(key, { expires: now + lifetime, tokens });
  }

  /** @internal */
  dropToken(key: string): void {
    this.tokens.delete(key);
  }

  /** @internal */
  discovered(key: string): OAuthDiscoveryState | undefined {
    const entry = this.discovery.get(key);
    return entry && entry.expires > Date.now() ? entry.state : undefined;
  }

  /** @internal */
  saveDiscovered(key: string, state: OAuthDiscoveryState | undefined): void {
    const now = Date.now();
    sweep(this.discovery, now);
    if (state) this.discovery.set(key, { expires: now + DISCOVERY_CACHE_MS, state });
    else this.discovery.delete(key);
  }

  /**
   * Sends each request with `Authorization: Bearer <the secret's current value>`. A 401 may mean
   * the token was rotated since this worker read it: the secret is read again and, when it changed,
   * the request is sent once more (a refused request was not processed, so this is safe).
   */
  private bearerFetch(ref: SecretRef, base: FetchLike): FetchLike {
    return async (url, init) => {
      const first = await this.secret(ref);
      const response = await base(url, withBearer(init, ref, first.value));
      if (response.status !== 401) return response;
      const fresh = await this.secret(ref, { fresh: true });
      if (fresh.version === first.version && fresh.value === first.value) return response;
      await response.body?.cancel();
      return base(url, withBearer(init, ref, fresh.value));
    };
  }
}

/**
 * The pool key of a declaration's credentials: the reference (whose secret, which client, which
 * server), never the value, so a rotation keeps the session and changes what its requests carry.
 */
export function credentialsKey(decl: McpToolDeclaration): string {
  // admin_owned too: a session opened under MCP_ALLOWED_HOSTS must never serve a user's private agent.
  return JSON.stringify([decl.server_url, Object.entries(decl.headers ?? {}).sort(), decl.auth ?? null, decl.auth ? (decl.secrets_owner_id ?? null) : null, decl.admin_owned === true, decl.sampling === true]);
}

/**
 * OAuth 2.1 client credentials for one server, the client secret read from a named secret when a
 * token is requested. The SDK's `auth()` runs the flow the MCP authorization spec describes: on a
 * 401, protected resource metadata (RFC 9728, from the WWW-Authenticate `resource_metadata` or the
 * well-known URL), then the authorization server's metadata (RFC 8414 / OpenID discovery), then
 * a token request with the `resource` indicator (RFC 8707), client_secret_basic or _post as the
 * server supports. The credentials are stamped with `issuer`, so the SDK never presents them to
 * another authorization server than the one named in the declaration.
 */
export class SecretClientCredentials implements OAuthClientProvider {
  private readonly tokenKey: string;
  private readonly discoveryKey: string;
  private freshSecret = false;

  constructor(
    private readonly auth: McpAuth,
    private readonly ref: SecretRef,
    private readonly declared: Extract<McpAuthReference, { type: 'oauth_client_credentials' }>,
    serverUrl: string,
  ) {
    this.tokenKey = JSON.stringify([ref.owner, ref.name, declared.client_id, declared.issuer, declared.scope ?? null, serverUrl]);
    this.discoveryKey = JSON.stringify([serverUrl, declared.issuer]);
  }

  get redirectUrl(): undefined {
    return undefined;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'yuxi-agents-worker', redirect_uris: [], grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic', scope: this.declared.scope };
  }

  async clientInformation(): Promise<OAuthClientInformationMixed> {
    const secret = await this.auth.secret(this.ref, { fresh: this.freshSecret });
    this.freshSecret = false;
    return { client_id: this.declared.client_id, client_secret: secret.value, issuer: this.declared.issuer };
  }

  tokens(): OAuthTokens | undefined {
    return this.auth.token(this.tokenKey);
  }

  saveTokens(tokens: OAuthTokens): void {
    this.auth.saveToken(this.tokenKey, tokens);
  }

  /** The SDK calls this when the authorization server refuses the client or the grant, before trying once more. */
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): void {
    if (scope === 'all' || scope === 'tokens') this.auth.dropToken(this.tokenKey);
    // The client secret may have been rotated: the retry reads it again.
    if (scope === 'all' || scope === 'client') this.freshSecret = true;
    if (scope === 'all' || scope === 'discovery') this.auth.saveDiscovered(this.discoveryKey, undefined);
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.auth.discovered(this.discoveryKey);
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.auth.saveDiscovered(this.discoveryKey, state);
  }

  /** The scope the declaration names wins over what the server advertises (it is what the client is registered for). */
  prepareTokenRequest(scope?: string): URLSearchParams {
    const params = new URLSearchParams({ grant_type: 'client_credentials' });
    const requested = this.declared.scope ?? scope;
    if (requested) params.set('scope', requested);
    return params;
  }

  redirectToAuthorization(): never {
    throw new Error('client credentials: there is no user to redirect');
  }

  saveCodeVerifier(): void {
    // Not used by the client credentials grant.
  }

  codeVerifier(): never {
    throw new Error('client credentials: there is no authorization code');
  }
}

// RFC 6750 b64token, widened to any visible ASCII: what a header value can carry as is.
const BEARER_TOKEN = /^[\x21-\x7e]+$/;

function withBearer(init: RequestInit | undefined, ref: SecretRef, token: string): RequestInit {
  // Checked here so that a bad value fails with a message naming the secret, never one quoting it.
  if (!BEARER_TOKEN.test(token)) throw new McpConfigError(`the secret "${ref.name}" is not a bearer token (visible ASCII characters only)`);
  const headers = new Headers(init?.headers);
  headers.set('Authorization', `Bearer ${token}`);
  return { ...init, headers };
}

function sweep(map: Map<string, { expires: number }>, now: number): void {
  if (map.size < SWEEP_AT) return;
  for (const [key, entry] of map) if (entry.expires <= now) map.delete(key);
}
