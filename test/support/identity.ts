import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { env } from './env.js';
import { API, type HttpResult, newKey } from './http.js';
import { SseStream } from './sse.js';

/**
 * Callers for the identity suites: who calls (an API key or user token, an optional X-End-User-Id)
 * and on which api replica. Every helper takes the caller explicitly; nothing falls back to the
 * suite's bootstrap key unless a function says so.
 */
export interface Caller {
  /** For assertion messages. */
  name: string;
  /** The bearer credential: an API key secret or a JWT. */
  token: string;
  /** X-End-User-Id, sent as is (undefined: no header at all). */
  endUser?: string;
}

export interface CallOptions {
  method?: string;
  body?: unknown;
  rawBody?: string;
  idempotencyKey?: string;
  headers?: Record<string, string>;
  /** Which api replica (default: env.apiUrl). */
  baseUrl?: string;
}

export const ADMIN = '/api/v1/admin';

/** The bootstrap administrator (the suite's key). */
export const bootstrap: Caller = { name: 'bootstrap admin', token: env.apiKey };

export function headersOf(caller: Caller | null, extra: Record<string, string> = {}): Record<string, string> {
  const headers: Record<string, string> = { ...extra };
  if (caller) headers.authorization = `Bearer ${caller.token}`;
  if (caller?.endUser !== undefined) headers['x-end-user-id'] = caller.endUser;
  return headers;
}

/** One real HTTP call as `caller` (null: no credentials) against either replica. */
export async function call<T = any>(caller: Caller | null, path: string, options: CallOptions = {}): Promise<HttpResult<T>> {
  const headers = headersOf(caller, options.headers);
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  let body: string | undefined;
  if (options.rawBody !== undefined || options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = options.rawBody ?? JSON.stringify(options.body);
  }
  const res = await fetch(`${options.baseUrl ?? env.apiUrl}${path}`, { method: options.method ?? (body !== undefined ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, text, body: parsed as T };
}

/** The same caller acting as another end user of its key's app. */
export function asEndUser(caller: Caller, endUser: string | undefined, name = `${caller.name} as ${endUser ?? 'default end user'}`): Caller {
  return { name, token: caller.token, endUser };
}

export interface CreatedKey {
  id: string;
  secret: string;
  body: any;
}

/** POST /admin/api-keys as `creator` (default: the bootstrap administrator); fails the test unless 201. */
export async function createKey(body: Record<string, unknown>, creator: Caller = bootstrap): Promise<CreatedKey> {
  const res = await call(creator, `${ADMIN}/api-keys`, { body: { name: `k-${randomUUID().slice(0, 8)}`, access: 'full', ...body } });
  if (res.status !== 201) throw new Error(`create key failed: ${res.status} ${res.text}`);
  return { id: res.body.id, secret: res.body.secret, body: res.body };
}

/** A fresh product user (a random uuid, created on first use) with one full-access key, made by the bootstrap administrator. */
export async function newProductUser(name: string, keyFields: Record<string, unknown> = {}): Promise<{ userId: string; key: CreatedKey; caller: Caller }> {
  const userId = randomUUID();
  const key = await createKey({ user_id: userId, access: 'full', ...keyFields });
  return { userId, key, caller: { name, token: key.secret } };
}

/** Creates a session as `caller` with an optional first input; fails the test unless 201. */
export async function createSessionAs(caller: Caller, input?: string, idempotencyKey = newKey('create'), agentId = 'default-chatbot'): Promise<any> {
  const res = await call(caller, `${API}/sessions`, { body: input === undefined ? { agent_id: agentId } : { agent_id: agentId, input }, idempotencyKey });
  if (res.status !== 201) throw new Error(`create session as ${caller.name} failed: ${res.status} ${res.text}`);
  return res.body;
}

/** POST …/events with one event as `caller`. */
export function postEventAs(caller: Caller, sessionId: string, event: object, idempotencyKey = newKey('event'), baseUrl?: string): Promise<HttpResult> {
  return call(caller, `${API}/sessions/${sessionId}/events`, { body: { events: [event] }, idempotencyKey, baseUrl });
}

export function sendMessageAs(caller: Caller, sessionId: string, text: string, idempotencyKey = newKey('msg')): Promise<HttpResult> {
  return postEventAs(caller, sessionId, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text }, idempotencyKey);
}

/** The session event stream as `caller` (on replica 1); a refusal comes back with its status and JSON body text. */
export function openStreamAs(caller: Caller, sessionId: string): Promise<SseStream> {
  return SseStream.request(`${API}/sessions/${sessionId}/events`, { headers: headersOf(caller, { accept: 'text/event-stream' }) });
}

/** Every id in GET /sessions for `caller`, following cursors (bounded). */
export async function listSessionIds(caller: Caller, baseUrl?: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  for (let page = 0; page < 50; page += 1) {
    const res: HttpResult = await call(caller, `${API}/sessions?limit=100${after ? `&after=${after}` : ''}`, { baseUrl });
    if (res.status !== 200) throw new Error(`list sessions as ${caller.name} failed: ${res.status} ${res.text}`);
    ids.push(...res.body.data.map((s: any) => s.id as string));
    if (!res.body.has_more) return ids;
    after = res.body.last_id;
  }
  throw new Error(`list sessions as ${caller.name}: more than 50 pages`);
}

export const JWT_ISSUER = 'https://issuer.test';
export const JWT_AUDIENCE = 'yuxi-tests';

export interface TokenOptions {
  subject?: string;
  issuer?: string;
  audience?: string;
  /** Unix seconds. Default: in ten minutes. */
  expiresAt?: number;
  secret?: string;
}

/** An HS256 user token; by default one the api accepts (the suite's JWT_SECRET, issuer and audience). */
export async function signToken(options: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(options.subject ?? `sub-${randomUUID()}`)
    .setIssuer(options.issuer ?? JWT_ISSUER)
    .setAudience(options.audience ?? JWT_AUDIENCE)
    .setIssuedAt(now - 1)
    .setExpirationTime(options.expiresAt ?? now + 600)
    .sign(new TextEncoder().encode(options.secret ?? env.jwtSecret));
}

/** An unsigned token (`alg: none`) with otherwise valid claims. */
export function unsignedToken(subject = `sub-${randomUUID()}`): string {
  const now = Math.floor(Date.now() / 1000);
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ sub: subject, iss: JWT_ISSUER, aud: JWT_AUDIENCE, iat: now - 1, exp: now + 600 })}.`;
}

/** Waits, bounded, until `probe` returns a value that is not undefined; undefined when it never did (for the caller to assert on). */
export async function until<T>(probe: () => Promise<T | undefined>, { attempts = 50, intervalMs = 100 } = {}): Promise<T | undefined> {
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return undefined;
}

export interface RawStream {
  status: number;
  contentType: string;
  retryAfter: string | null;
  /** The JSON answer of a refused stream ('' for an open one). */
  bodyText: string;
  close(): void;
}

/**
 * Opens the session event stream as `caller` on either replica, without parsing events: for
 * checks of who may hold a stream open. An open stream is drained until `close()`.
 */
export async function openRawStream(caller: Caller, sessionId: string, baseUrl = env.apiUrl): Promise<RawStream> {
  const controller = new AbortController();
  const res = await fetch(`${baseUrl}${API}/sessions/${sessionId}/events`, { headers: headersOf(caller, { accept: 'text/event-stream' }), signal: controller.signal });
  const contentType = res.headers.get('content-type') ?? '';
  const result: RawStream = { status: res.status, contentType, retryAfter: res.headers.get('retry-after'), bodyText: '', close: () => controller.abort() };
  if (contentType.startsWith('text/event-stream') && res.body) {
    const body = res.body;
    void (async () => {
      for await (const chunk of body) void chunk;
    })().catch(() => undefined);
  } else {
    result.bodyText = await res.text();
  }
  return result;
}
