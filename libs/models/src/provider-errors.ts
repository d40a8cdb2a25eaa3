import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { ModelError } from './model.types.js';

export interface ClassifyOptions {
  /** Strings that must never appear in a message (the API key); redacted wherever they occur. */
  secrets?: string[];
  /** "now" for an HTTP-date Retry-After; a parameter so the function stays pure. */
  now?: number;
}

const CONTEXT_LENGTH = /context[ _-]?length|context window|maximum context|too many tokens|prompt is too long/i;
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);
const MAX_MESSAGE = 500;

/**
 * Maps whatever a provider call threw (the openai client's errors, fetch/undici errors, anything
 * shaped like them) onto a stable ModelError code, deciding what is worth retrying. Pure.
 */
export function classifyProviderError(error: unknown, options: ClassifyOptions = {}): ModelError {
  if (error instanceof ModelError) return error;
  const detail = redact(describe(error), options.secrets ?? []);
  if (error instanceof APIConnectionTimeoutError) return new ModelError('model_timeout', `model call timed out: ${detail}`, true);
  if (error instanceof APIUserAbortError) return new ModelError('model_unavailable', `model call aborted: ${detail}`);
  if (error instanceof APIConnectionError) return fromNetwork(error.cause, detail) ?? unreachable(detail);

  const status = statusOf(error);
  if (status === undefined) {
    if (isNamed(error, 'TimeoutError')) return new ModelError('model_timeout', `model call timed out: ${detail}`, true);
    return fromNetwork(error, detail) ?? new ModelError('model_unavailable', `model call failed: ${detail}`);
  }
  if (status === 429) {
    return new ModelError('model_rate_limited', `model provider rate limited the call (429): ${detail}`, true, retryAfterMs(headersOf(error), options.now ?? Date.now()));
  }
  if (status === 408 || status === 504) return new ModelError('model_timeout', `model provider timed out (${status}): ${detail}`, true);
  if (status === 401 || status === 403) return new ModelError('model_auth_failed', `model provider refused the credentials (${status}): ${detail}`);
  if (status === 400 || status === 404 || status === 413 || status === 422) {
    if (isContextLength(error)) {
      return new ModelError('model_context_length_exceeded', `the conversation exceeds the model's context length (${status}): ${detail}`);
    }
    return new ModelError('model_bad_request', `model provider rejected the request (${status}): ${detail}`);
  }
  if (status === 409 || status >= 500) return new ModelError('model_unavailable', `model provider unavailable (${status}): ${detail}`, true);
  return new ModelError('model_unavailable', `model call failed (${status}): ${detail}`);
}

/** Milliseconds from `retry-after-ms`, else `retry-after` (seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(headers: HeaderBag | undefined, now: number): number | null {
  const ms = Number.parseFloat(header(headers, 'retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const raw = header(headers, 'retry-after')?.trim();
  if (!raw) return null;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number.parseFloat(raw) * 1000);
  const date = Date.parse(raw);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

type HeaderBag = { get(name: string): string | null } | Record<string, unknown>;

function header(headers: HeaderBag | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  if (typeof headers.get === 'function') return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return Array.isArray(entry) ? String(entry[0]) : entry === undefined || entry === null ? undefined : String(entry);
}

function statusOf(error: unknown): number | undefined {
  if (error instanceof APIError) return error.status;
  const status = field(error, 'status') ?? field(error, 'statusCode');
  return typeof status === 'number' && Number.isInteger(status) ? status : undefined;
}

function headersOf(error: unknown): HeaderBag | undefined {
  const headers = field(error, 'headers');
  return headers && typeof headers === 'object' ? (headers as HeaderBag) : undefined;
}

/** The provider's error object: APIError keeps `error` (the body's `error`), others may keep the body whole. */
function bodyErrorOf(error: unknown): unknown {
  const body = field(error, 'error');
  return field(body, 'error') ?? body;
}

function isContextLength(error: unknown): boolean {
  const body = bodyErrorOf(error);
  const codes = [field(error, 'code'), field(body, 'code'), field(body, 'type')];
  if (codes.includes('context_length_exceeded')) return true;
  const messages = [field(body, 'message'), error instanceof Error ? error.message : undefined];
  return messages.some((message) => typeof message === 'string' && CONTEXT_LENGTH.test(message));
}

/** Walks the cause chain for a Node/undici network error code. */
function fromNetwork(error: unknown, detail: string): ModelError | null {
  for (let current = error, depth = 0; current && depth < 5; current = field(current, 'cause'), depth++) {
    const code = field(current, 'code');
    if (typeof code !== 'string') continue;
    if (TIMEOUT_CODES.has(code)) return new ModelError('model_timeout', `model call timed out: ${detail}`, true);
    if (NETWORK_CODES.has(code)) return unreachable(detail);
  }
  return null;
}

function unreachable(detail: string): ModelError {
  return new ModelError('model_unavailable', `model provider unreachable: ${detail}`, true);
}

function describe(error: unknown): string {
  const body = bodyErrorOf(error);
  const message = field(body, 'message') ?? (error instanceof Error ? error.message : field(error, 'message'));
  const text = typeof message === 'string' && message ? message : typeof error === 'string' ? error : 'unknown error';
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}

/** Belt and braces: providers echo keys back (e.g. "Incorrect API key provided: sk-…"). */
function redact(text: string, secrets: string[]): string {
  let result = text;
  for (const secret of secrets) if (secret.length >= 4) result = result.split(secret).join('[redacted]');
  return result.replace(/\b(sk-[A-Za-z0-9_*-]{6,})/g, 'sk-[redacted]').replace(/\b(Bearer\s+)\S+/gi, '$1[redacted]');
}

function isNamed(error: unknown, name: string): boolean {
  return field(error, 'name') === name;
}

function field(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
}
