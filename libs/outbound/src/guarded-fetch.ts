import type dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import { injectTraceHeaders } from '#libs/telemetry';
import { hostOf, isAllowedHost, isPublicAddress, NOT_PUBLIC } from './address-policy.js';
import { guardedLookup, OUTBOUND_BLOCKED_CODE } from './guarded-lookup.js';

/** A request refused by the address policy: nothing was sent. */
export class OutboundBlockedError extends Error {
  readonly code = OUTBOUND_BLOCKED_CODE;

  constructor(message: string) {
    super(message);
    this.name = 'OutboundBlockedError';
  }
}

/** Whether an error (or its cause) is the address policy's refusal. */
export function isOutboundBlocked(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (current instanceof OutboundBlockedError || (current as { code?: unknown }).code === OUTBOUND_BLOCKED_CODE) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export interface GuardedFetchOptions {
  /** Private, loopback, link-local and reserved addresses allowed (development, tests). */
  allowPrivate: boolean;
  /** parseAllowedHosts' entries: these hosts (host or host:port) skip the private-address refusal. */
  allowedHosts?: readonly string[];
  /** dns.lookup, replaceable in tests (a resolver that rebinds). */
  dnsLookup?: typeof dns.lookup;
  /**
   * Bytes one response body may carry (0: no bound). Past it the body errors with
   * ResponseTooLargeError and the connection is dropped: a server the caller chose cannot make
   * this process buffer what it likes (the MCP SDK reads JSON answers whole).
   */
  maxResponseBytes?: number;
}

/** A response body that went past GuardedFetchOptions.maxResponseBytes. */
export class ResponseTooLargeError extends Error {
  readonly code = 'RESPONSE_TOO_LARGE';

  constructor(limit: number) {
    super(`the response is larger than ${limit} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}


/** What `fetch` is called with, the parts a guarded fetch honours. */
export type FetchFunction = (url: string | URL, init?: RequestInit) => Promise<Response>;

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * A `fetch` for requests to addresses a caller chose (MCP servers, their OAuth endpoints): over
 * node:http/https, whose sockets resolve their host through guardedLookup, so the address policy
 * is applied to what is actually connected to (DNS rebinding), and nothing is sent to a refused
 * address: the promise rejects with OutboundBlockedError. A literal address is judged before the
 * request. Redirects are followed within the request's origin only (same scheme, host and port),
 * at most 5; `redirect: 'manual'` returns the 3xx as is (the MCP SDK follows within the origin
 * through this same fetch), `redirect: 'error'` rejects. Bodies are not decompressed (none is
 * asked for: no Accept-Encoding is sent unless the caller sets one).
 */
export function createGuardedFetch(options: GuardedFetchOptions): FetchFunction {
  const allowedHosts = options.allowedHosts ?? [];
  // Sockets are kept alive per policy: one connected for an allowlisted host never serves a request that is not.
  const agentOptions = { keepAlive: true, maxSockets: 64, timeout: 30_000 };
  const pools = {
    guarded: { lookup: guardedLookup(options.allowPrivate, options.dnsLookup), http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) },
    open: { lookup: guardedLookup(true, options.dnsLookup), http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) },
  };
  const send = async (url: URL, init: RequestInit | undefined): Promise<Response> => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundBlockedError(`the URL scheme ${url.protocol} is not allowed`);
    const allowed = options.allowPrivate || isAllowedHost(url, allowedHosts);
    const host = hostOf(url);
    if (!allowed && isIP(host) !== 0 && !isPublicAddress(host)) throw new OutboundBlockedError(`the address ${host} is not allowed: it ${NOT_PUBLIC}`);
    const pool = allowed ? pools.open : pools.guarded;
    return request(url, init, pool.lookup, url.protocol === 'https:' ? pool.https : pool.http, options.maxResponseBytes ?? 0);
  };
  return async (input, init) => {
    const url = new URL(String(input instanceof URL ? input.href : input));
    let response = await send(url, init);
    const mode = init?.redirect ?? 'follow';
    let current = url;
    let currentInit = init;
    for (let followed = 0; REDIRECTS.has(response.status) && mode !== 'manual'; followed++) {
      if (mode === 'error') throw new OutboundBlockedError('the server answered with a redirect');
      const location = response.headers.get('location');
      let target: URL;
      try {
        target = new URL(location ?? '', current);
      } catch {
        return response;
      }
      // Another origin is never followed: the policy judged this one, and credentials were meant for it.
      if (!location || followed === MAX_REDIRECTS || target.origin !== current.origin || target.username !== current.username || target.password !== current.password) return response;
      const keepsMethod = response.status === 307 || response.status === 308;
      await response.body?.cancel().catch(() => undefined);
      currentInit = keepsMethod ? currentInit : { ...currentInit, method: 'GET', body: undefined };
      current = target;
      response = await send(target, currentInit);
    }
    return response;
  };
}

function request(url: URL, init: RequestInit | undefined, lookup: LookupFunction, agent: http.Agent, maxResponseBytes: number): Promise<Response> {
  const signal = init?.signal ?? undefined;
  return (async () => {
    signal?.throwIfAborted();
    // Request normalises what fetch accepts as a body (string, URLSearchParams, bytes, Blob) and its headers.
    // `duplex` lets a stream body through (read whole here: requests to MCP servers are small JSON).
    const normalised = new Request(url, { method: init?.method, headers: init?.headers, body: init?.body, signal: undefined, duplex: 'half' } as RequestInit);
    const body = normalised.body ? Buffer.from(await normalised.arrayBuffer()) : undefined;
    const headers: Record<string, string> = {};
    normalised.headers.forEach((value, name) => {
      headers[name] = value;
    });
    if (body !== undefined) headers['content-length'] = String(body.length);
    // The active span's `traceparent` (and `tracestate`), so the server's spans join the trace
    // (MCP servers, web search) — unless the caller sent its own. Tracing off: nothing written.
    if (headers.traceparent === undefined) injectTraceHeaders(headers);
    return new Promise<Response>((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : http).request(url, { method: normalised.method, headers, agent, lookup });
      const onAbort = () => req.destroy(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (error) => {
        signal?.removeEventListener('abort', onAbort);
        reject(signal?.aborted ? signal.reason : error);
      });
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        const responseHeaders = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) responseHeaders.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
        res.on('close', () => signal?.removeEventListener('abort', onAbort));
        const noBody = NULL_BODY.has(status) || normalised.method === 'HEAD';
        if (noBody) res.resume();
        let response: Response;
        try {
          // Counted as it arrives (beside the web stream's own reading, which sets the pace): past the
          // bound the socket is destroyed with the error, which the body's reader then gets.
          if (maxResponseBytes > 0 && !noBody) {
            let seen = 0;
            res.on('data', (chunk: Buffer) => {
              seen += chunk.length;
              if (seen > maxResponseBytes) res.destroy(new ResponseTooLargeError(maxResponseBytes));
            });
          }
          response = new Response(noBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, statusText: res.statusMessage, headers: responseHeaders });
        } catch (error) {
          res.destroy();
          return reject(error);
        }
        Object.defineProperty(response, 'url', { value: url.href });
        resolve(response);
      });
      req.end(body);
    });
  })();
}
