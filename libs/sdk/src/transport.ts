import { AgentsApiError, AgentsConnectionError, AgentsProtocolError } from './errors.js';
import { backoffMs, DEFAULT_RETRY, parseRetryAfter, type RetryPolicy, sleep } from './retry.js';
import type { ErrorBody } from './types.js';

export interface ClientOptions {
  /** Where the API is served, e.g. `https://agents.example.com` (paths start with /api/v1/agents). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** For keys bound to an app: the end user to act as (`X-End-User-Id`). */
  endUserId?: string;
  /**
   * A fetch implementation (default: the global fetch). It is called with one built `Request`
   * (method, headers and body in it, no `init`): a wrapper must read what it needs from the
   * request, as the WHATWG fetch does.
   */
  fetch?: typeof fetch;
  retry?: Partial<RetryPolicy>;
  /** One attempt of a JSON call may take this long (default 60 s); a timeout is retried like a lost connection. */
  timeoutMs?: number;
}

/** Options every call takes. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of a submission (session create, event submit). */
export interface WriteOptions extends CallOptions {
  /**
   * The Idempotency-Key of this logical call (1–128 characters). Generated when omitted (unique to
   * the call); every retry of the call reuses it. Pass your own to make a submission idempotent
   * across process restarts (keep it with the command it stands for, and never reuse it for
   * another one). After a lost answer, a receipt found under your own key is not taken on trust:
   * the submission is sent again with it, so that the server answers (see submitEvent).
   */
  idempotencyKey?: string;
}

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Query;
  body?: unknown;
  idempotencyKey?: string;
  /** Further request headers of this call (e.g. `if-match`). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Overrides the client's retry count for this call. */
  maxRetries?: number;
  /**
   * After an attempt whose answer was lost (the request may have been processed), looks the
   * outcome up before sending anything again. See Recovery.
   */
  recover?: (signal: AbortSignal | undefined) => Promise<Recovery>;
}

/**
 * What a lookup after a lost answer found:
 * - `answer`: the outcome of this very call, authoritative (the SDK's own key, unique to the call):
 *   returned as the call's result.
 * - `resend`: the key was used (by this call or, for a caller's key, possibly by another intent):
 *   the request is sent again at once with the same key, so the server itself answers: the stored
 *   response of that key, byte for byte, or 409 `idempotency_conflict` for a different intent.
 * - `not_found`: not processed yet, or still in flight: sent again after the backoff, same key.
 */
export type Recovery = { kind: 'answer'; value: unknown } | { kind: 'resend' } | { kind: 'not_found' };

/** Thrown by an attempt whose answer did not arrive: a reset connection, a timeout, a cut body. */
class LostResponse extends Error {}

/**
 * The HTTP layer: credentials, JSON, and the API's rules for recovering from a lost connection. A logical call
 * keeps one Idempotency-Key across its attempts; network errors, 429 (after its Retry-After) and
 * 5xx errors the server marks `retryable` are retried with capped backoff; anything else is
 * thrown as an AgentsApiError at once.
 */
export class Transport {
  readonly retry: RetryPolicy;
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  async request<T>(spec: RequestSpec): Promise<T> {
    // Serialised once: every attempt sends the same bytes under the same key, whatever the caller
    // does with its object meanwhile (a changed body would be another intent under that key).
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= (spec.maxRetries ?? this.retry.maxRetries);
      let response: Response;
      let text: string;
      try {
        ({ response, text } = await this.attempt(spec, body));
      } catch (error) {
        if (!(error instanceof LostResponse)) throw error;
        // The request may have been processed: find its outcome before sending it again.
        const found: Recovery = spec.recover
          ? await spec.recover(spec.signal).catch((lookup: unknown) => {
              if (spec.signal?.aborted) throw lookup;
              return { kind: 'not_found' } as const; // the lookup failed too: retry the command itself, same key
            })
          : { kind: 'not_found' };
        if (found.kind === 'answer') return found.value as T;
        if (last) throw new AgentsConnectionError(`${spec.method} ${spec.path}: ${error.message}`, { cause: error.cause, idempotencyKey: spec.idempotencyKey });
        if (found.kind === 'not_found') await sleep(backoffMs(this.retry, attempt + 1), spec.signal);
        continue;
      }
      if (response.ok) return parseJson(text, response.status) as T;
      const failure = toError(response, text);
      const wait = this.retryDelay(failure, attempt + 1);
      if (last || wait === null) throw failure;
      await sleep(wait, spec.signal);
    }
  }

  /**
   * The request of one GET of the event stream. Built apart from sending it: what fails here (a
   * header value that is not Latin-1, a bad base URL) is a mistake to report, not a lost connection.
   */
  streamRequest(path: string, lastEventId: string | undefined, signal: AbortSignal): Request {
    const headers = this.headers({ accept: 'text/event-stream' });
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    return new Request(this.url(path), { method: 'GET', headers, signal });
  }

  /** Sends a request of streamRequest (no retries here: the event iterator owns reconnection). */
  send(request: Request): Promise<Response> {
    return this.fetchImpl(request);
  }

  /** The wait before retrying a failed answer, or null when it must not be retried. */
  retryDelay(failure: Error, retry: number): number | null {
    const status = failure instanceof AgentsApiError || failure instanceof AgentsProtocolError ? failure.status : 0;
    const retryAfter = failure instanceof AgentsApiError ? failure.retryAfter : null;
    const retryable =
      (failure instanceof AgentsApiError && (status === 429 || (status >= 500 && failure.retryable))) ||
      // A gateway's own answer (no API error body): the API behind it was not reached or did not answer.
      (failure instanceof AgentsProtocolError && [502, 503, 504].includes(status));
    if (!retryable) return null;
    if (retryAfter !== null) return retryAfter <= this.retry.maxRetryAfterMs ? retryAfter : null;
    return backoffMs(this.retry, retry);
  }

  url(path: string, query?: Query): string {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(name, String(value));
    const search = params.toString();
    return `${this.baseUrl}${path}${search ? `?${search}` : ''}`;
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.options.apiKey}`, ...extra };
    if (this.options.endUserId !== undefined) headers['x-end-user-id'] = this.options.endUserId;
    return headers;
  }

  private async attempt(spec: RequestSpec, body: string | undefined): Promise<{ response: Response; text: string }> {
    const headers = this.headers({ ...spec.headers, accept: 'application/json' });
    if (spec.idempotencyKey !== undefined) headers['idempotency-key'] = spec.idempotencyKey;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
    // Built before the try: a TypeError here (a header value that is not Latin-1, a bad URL) is a
    // mistake in what was asked, thrown as is, never taken for a lost answer and retried.
    const request = new Request(this.url(spec.path, spec.query), { method: spec.method, headers, body, signal });
    try {
      const response = await this.fetchImpl(request);
      // The body is part of the answer: a connection cut while it arrives loses the answer too.
      return { response, text: await response.text() };
    } catch (error) {
      if (spec.signal?.aborted) throw spec.signal.reason;
      // fetch rejects with a TypeError for network failures; the timeout aborts with a TimeoutError.
      if (error instanceof TypeError || (error instanceof Error && error.name === 'TimeoutError')) {
        throw new LostResponse(describeNetworkError(error), { cause: error });
      }
      throw error;
    }
  }
}

function describeNetworkError(error: Error): string {
  const cause = error.cause as { code?: string; message?: string } | undefined;
  return [error.message, cause?.code ?? cause?.message].filter(Boolean).join(': ');
}

function parseJson(text: string, status: number): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new AgentsProtocolError(`A ${status} answer that is not JSON`, status, text.slice(0, 2_000));
  }
}

/** The typed error of a non-2xx answer. */
export function toError(response: Response, text: string): AgentsApiError | AgentsProtocolError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = (body as Partial<ErrorBody> | undefined)?.error;
  if (!error || typeof error !== 'object' || typeof error.code !== 'string') {
    return new AgentsProtocolError(`HTTP ${response.status} without an API error body`, response.status, text.slice(0, 2_000));
  }
  return new AgentsApiError(response.status, error, {
    requestId: response.headers.get('x-request-id'),
    retryAfter: parseRetryAfter(response.headers.get('retry-after')),
  });
}
