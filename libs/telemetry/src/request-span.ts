import { type Span, SpanStatusCode } from '@opentelemetry/api';
import { SESSION_ATTRIBUTE } from './span-sink.js';

/**
 * The pure part of the api's SERVER span per request (the middleware is apps/api/src/request-span.ts):
 * which requests get one, its name and attributes (HTTP semantic conventions), and how it ends.
 */

/** Probes, scrapes, the API's documentation and the console's static files: polled or fetched in bulk, never worth a trace. */
const UNTRACED_PATH = /^\/(?:health|metrics|docs|console)(?:\/|$)|^\/openapi\.json$/i;

/** Whether a request to `path` (without its query) gets a span. */
export function tracesRequestPath(path: string): boolean {
  return !UNTRACED_PATH.test(path);
}

const KNOWN_METHODS = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);

/** `http.request.method`: a known method, else `_OTHER` (a client's made-up token is not a label). */
export function httpMethodAttribute(method: string): string {
  const upper = method.toUpperCase();
  return KNOWN_METHODS.has(upper) ? upper : '_OTHER';
}

/** `{METHOD} {route}` with the route's template, `{METHOD}` alone when no route served it (`HTTP` for an unknown method). */
export function requestSpanName(method: string, route: string | null): string {
  const verb = httpMethodAttribute(method);
  const shown = verb === '_OTHER' ? 'HTTP' : verb;
  return route === null ? shown : `${shown} ${route}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The session a request names, read from its path at the position of the route's `:session_id`
 * (null when the route has none, or the segment is not a UUID: such a request names no session).
 */
export function sessionIdOfRoute(route: string | null, path: string): string | null {
  if (route === null) return null;
  const index = route.split('/').indexOf(':session_id');
  if (index < 0) return null;
  const segment = path.split('/')[index];
  return segment !== undefined && UUID.test(segment) ? segment.toLowerCase() : null;
}

/** url.path is the client's: bounded, as every input. */
export const MAX_URL_PATH_LENGTH = 2048;

export interface RequestOutcome {
  /** The route template that served the request (or would have); null: none. */
  route: string | null;
  /** The path as routed (for the session id). */
  path: string;
  /** The status sent; null when the client left before any response. */
  status: number | null;
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Names and ends a request's span once its response closed: route, status, session; ERROR for a 5xx. */
export function endRequestSpan(span: Span, method: string, outcome: RequestOutcome): void {
  span.updateName(requestSpanName(method, outcome.route));
  if (outcome.route !== null) span.setAttribute('http.route', outcome.route);
  // Only a request that changed a session joins its kept spans (the span store keeps spans naming a
  // session): reads and streams of a session, polled all day, would fill the store with spans that
  // no turn's trace lists. And only once it succeeded (2xx): the id in the path is the client's
  // claim, checked against the owner by the handler; a 401 or 404 (anyone, another owner's session)
  // must not store a span under a session its caller cannot see.
  const succeeded = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
  const sessionId = !succeeded || READ_METHODS.has(method.toUpperCase()) ? null : sessionIdOfRoute(outcome.route, outcome.path);
  if (sessionId !== null) span.setAttribute(SESSION_ATTRIBUTE, sessionId);
  if (outcome.status !== null) {
    span.setAttribute('http.response.status_code', outcome.status);
    if (outcome.status >= 500) {
      span.setAttribute('error.type', String(outcome.status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
}
