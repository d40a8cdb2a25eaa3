import { randomUUID } from 'node:crypto';
import { env } from './env.js';

export interface HttpResult<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  rawBody?: string;
  key?: string | null;
  idempotencyKey?: string | null;
  headers?: Record<string, string>;
}

/** One real HTTP call to the api under test; `key: null` sends no credentials. */
export async function http<T = any>(path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? env.apiKey : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
  let body: string | undefined;
  if (options.rawBody !== undefined || options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = options.rawBody ?? JSON.stringify(options.body);
  }
  const res = await fetch(`${env.apiUrl}${path}`, { method: options.method ?? (body ? 'POST' : 'GET'), headers, body });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: parseJson(text) as T };
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

export const API = '/api/v1/agents';

export function newKey(prefix = 'test'): string {
  return `${prefix}-${randomUUID()}`;
}

export async function createSession(input?: unknown, key?: string): Promise<any> {
  const res = await http(`${API}/sessions`, {
    body: input === undefined ? { agent_id: 'default-chatbot' } : { agent_id: 'default-chatbot', input },
    idempotencyKey: newKey('create'),
    key,
  });
  if (res.status !== 201) throw new Error(`create session failed: ${res.status} ${res.text}`);
  return res.body;
}

/** POST …/events with one event. */
export async function postEvent(sessionId: string, event: object, idempotencyKey = newKey('event')): Promise<HttpResult> {
  return http(`${API}/sessions/${sessionId}/events`, { body: { events: [event] }, idempotencyKey });
}

/** A follow-up message. */
export async function sendMessage(sessionId: string, text: string, idempotencyKey = newKey('msg')): Promise<HttpResult> {
  return postEvent(sessionId, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text }, idempotencyKey);
}
