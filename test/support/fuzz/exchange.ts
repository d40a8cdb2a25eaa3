import { gzipSync } from 'node:zlib';
import { ERROR_CODES } from '#libs/errors';
import { mediaType, type Operation, type ResponseChecker } from './openapi-model.js';
import type { FuzzCase } from './requests.js';

// Sends a fuzzed request for real and checks the answer against the document and the API's rules.

export interface Exchange {
  method: string;
  url: string;
  requestHeaders: Record<string, string>;
  requestBody: string | undefined;
  notes: string[];
  status: number;
  headers: Headers;
  text: string;
  /** A network error or timeout instead of a response. */
  failure?: string;
}

export interface SendOptions {
  baseUrl: string;
  apiKey: string;
  /** A fresh Idempotency-Key for every request that takes one. */
  nextIdempotencyKey: () => string;
  /** The last Idempotency-Key sent to each operation, for the reuse mutation. */
  lastKeys: Map<string, string>;
  timeoutMs: number;
}

/**
 * Node refuses a request head over 16 KiB (431) before the app sees it: path and query values stay
 * well below, so that the answer is the app's.
 */
const MAX_URL_VALUE = 3000;

const LONE_SURROGATE = /([\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff])/;

/**
 * A path segment: percent-encoded, a lone surrogate as the (invalid UTF-8) bytes it would have in
 * WTF-8, which encodeURIComponent refuses to produce; values that the URL parser would resolve as
 * dot segments (another route) are replaced.
 */
function segment(value: string): string {
  if (value === '.' || value === '..') return '...';
  return value
    .slice(0, MAX_URL_VALUE)
    .split(LONE_SURROGATE)
    .map((part, index) => {
      // split() puts the captured separators at the odd indexes.
      if (index % 2 === 0) return encodeURIComponent(part);
      const unit = part.charCodeAt(0);
      return [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    })
    .join('');
}

export async function send(op: Operation, fuzz: FuzzCase, options: SendOptions): Promise<Exchange> {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => segment(fuzz.pathParams[name] ?? 'missing'));
  const url = new URL(`${options.baseUrl}${path}`);
  for (const [name, value] of fuzz.query) url.searchParams.append(name, value.slice(0, MAX_URL_VALUE));

  const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}` };
  if (op.parameters.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')) {
    headers['idempotency-key'] = options.nextIdempotencyKey();
    if (fuzz.headers['idempotency-key'] === '<reuse>') headers['idempotency-key'] = options.lastKeys.get(op.name) ?? headers['idempotency-key'];
  }
  for (const [name, value] of Object.entries(fuzz.headers)) {
    if (value === null) delete headers[name];
    else if (value !== '<reuse>') headers[name] = value;
  }
  if (headers['idempotency-key'] !== undefined) options.lastKeys.set(op.name, headers['idempotency-key']);

  let body: string | Uint8Array | undefined;
  let shown: string | undefined;
  if (fuzz.body?.kind === 'json') {
    headers['content-type'] = 'application/json';
    body = shown = JSON.stringify(fuzz.body.value);
  } else if (fuzz.body?.kind === 'bytes') {
    shown = fuzz.body.shown;
    body = fuzz.body.bytes;
    if (fuzz.body.contentType !== null) headers['content-type'] = fuzz.body.contentType;
  } else if (fuzz.body?.kind === 'raw') {
    shown = fuzz.body.text;
    // Bytes, not a string: fetch would otherwise add text/plain where no Content-Type is wanted.
    body = new TextEncoder().encode(fuzz.body.text);
    if (fuzz.body.contentType !== null) headers['content-type'] = fuzz.body.contentType;
    if (fuzz.body.encoding) {
      headers['content-encoding'] = fuzz.body.encoding;
      if (fuzz.body.compress) body = gzipSync(body);
    }
  }

  // The suite's key stays out of failure messages.
  const shownHeaders = { ...headers, ...(headers.authorization === `Bearer ${options.apiKey}` ? { authorization: 'Bearer <suite key>' } : {}) };
  const exchange: Exchange = { method: op.method, url: url.pathname + url.search, requestHeaders: shownHeaders, requestBody: shown, notes: fuzz.notes, status: 0, headers: new Headers(), text: '' };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no complete answer within ${options.timeoutMs} ms`)), options.timeoutMs);
  try {
    const res = await fetch(url, { method: op.method, headers, body, signal: controller.signal, redirect: 'manual' });
    exchange.status = res.status;
    exchange.headers = res.headers;
    // An event stream never ends: its status and Content-Type are what is checked; close it at once.
    if (mediaType(res.headers.get('content-type')) === 'text/event-stream') controller.abort();
    else exchange.text = await res.text();
  } catch (error) {
    if (exchange.status === 0) exchange.failure = error instanceof Error ? `${error.message}${error.cause ? ` (${String(error.cause)})` : ''}` : String(error);
  } finally {
    clearTimeout(timer);
  }
  return exchange;
}

/** Everything wrong with one answer; empty when it conforms. */
export function problemsOf(checker: ResponseChecker, op: Operation, ex: Exchange): string[] {
  if (ex.failure) return [`no response: ${ex.failure}`];
  const problems: string[] = [];
  if (ex.status >= 500) problems.push(`server error ${ex.status}`);
  problems.push(...checker.check(op, ex.status, ex.headers.get('content-type'), ex.text));
  const requestId = ex.headers.get('x-request-id');
  if (!requestId) problems.push('no X-Request-Id header');
  if (ex.status === 429 && !ex.headers.get('retry-after')) problems.push('429 without Retry-After');
  if (ex.status >= 400 && mediaType(ex.headers.get('content-type')) === 'application/json') {
    const error = parseJson(ex.text)?.error as { code?: string; request_id?: string } | undefined;
    const spec = error?.code ? ERROR_CODES[error.code as keyof typeof ERROR_CODES] : undefined;
    if (!spec) problems.push(`error code ${JSON.stringify(error?.code)} is not in the catalogue`);
    else if (spec.status !== ex.status) problems.push(`error code ${error?.code} is a ${spec.status} in the catalogue, answered with ${ex.status}`);
    if (error && requestId && error.request_id !== requestId) problems.push(`error.request_id ${JSON.stringify(error.request_id)} is not the X-Request-Id ${JSON.stringify(requestId)}`);
  }
  return problems;
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
}

function excerpt(text: string | undefined, max: number): string {
  if (text === undefined) return '(none)';
  const printable = JSON.stringify(text.length > max ? text.slice(0, max) : text).slice(1, -1);
  return text.length > max ? `${printable}… (${text.length} chars)` : printable;
}

/** The request and response, as a failure message shows them. */
export function describeExchange(ex: Exchange): string {
  const headers = Object.entries(ex.requestHeaders)
    .map(([name, value]) => `${name}: ${excerpt(value, 60)}`)
    .join('; ');
  const request = `${ex.method} ${excerpt(ex.url, 300)}\n      headers: ${headers || '(defaults)'}\n      body: ${excerpt(ex.requestBody, 300)}`;
  const response = ex.failure
    ? `no response: ${ex.failure}`
    : `${ex.status} ${ex.headers.get('content-type') ?? '(no Content-Type)'} x-request-id=${ex.headers.get('x-request-id') ?? '(none)'}\n      ${excerpt(ex.text, 500)}`;
  return `    mutations: ${ex.notes.join('; ') || '(none: a valid request)'}\n    request: ${request}\n    response: ${response}`;
}
