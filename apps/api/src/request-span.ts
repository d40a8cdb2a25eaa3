import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routeLabel, routeMatcher, type RouteMatcher, routePatterns, UNMATCHED_ROUTE } from '#libs/metrics';
import { endRequestSpan, extractHttpContext, httpMethodAttribute, MAX_URL_PATH_LENGTH, requestSpanName, type Span, SpanKind, startSpan, tracesRequestPath, tracingOn, withSpan } from '#libs/telemetry';

/**
 * The SERVER span of each API request (tracing on only; off, neither middleware is mounted): its
 * parent is the client's `traceparent`/`tracestate` when valid (else it starts a trace), the
 * handler runs with it active (so the input it accepts stores its context), and it is named by
 * the route's template and ended when the response closes (request-span.ts of libs/telemetry).
 *
 * `start` goes first in the chain; `rebind` after the body parser, which resumes the chain from
 * the socket's callbacks, outside the span's async context (as the log context is bound again).
 */
export function requestSpans(): { start: RequestHandler; rebind: RequestHandler } | null {
  if (!tracingOn()) return null;
  const spans = new WeakMap<Response, Span>();
  let matcher: RouteMatcher | null = null;
  const start = (req: Request, res: Response, next: NextFunction): void => {
    const query = req.url.indexOf('?');
    const path = query === -1 ? req.url : req.url.slice(0, query);
    if (!tracesRequestPath(path)) return next();
    const method = req.method;
    const span = startSpan(requestSpanName(method, null), {
      kind: SpanKind.SERVER,
      parent: extractHttpContext(req.headers),
      attributes: { 'http.request.method': httpMethodAttribute(method), 'url.path': path.slice(0, MAX_URL_PATH_LENGTH) },
    });
    if (!span) return next();
    spans.set(res, span);
    res.once('close', () => {
      // Routes are all registered by the first request (Nest registers them before it listens).
      matcher ??= routeMatcher(routePatterns(req.app));
      const route = routeLabel(req.route as { path?: unknown } | undefined, req.baseUrl, req.path, matcher, method);
      endRequestSpan(span, method, { route: route === UNMATCHED_ROUTE ? null : route, path: req.path, status: res.headersSent ? res.statusCode : null });
    });
    withSpan(span, next);
  };
  const rebind = (_req: Request, res: Response, next: NextFunction): void => {
    const span = spans.get(res);
    if (span) withSpan(span, next);
    else next();
  };
  return { start, rebind };
}
