import type { Application, NextFunction, Request, Response } from 'express';
import { type Metrics, metrics as processMetrics } from './metrics.js';
import { routeLabel, routeMatcher, type RouteMatcher, type RoutePattern } from './route-label.js';

/** The status label of a request whose client left before any response was sent (nginx's convention). */
export const CLIENT_CLOSED_STATUS = '499';

/**
 * Counts and times every request by method, route pattern and status, when its response closes
 * (finished or cut). Install it first, so refusals by later middleware (401, 413, 429) count too.
 */
export function httpMetricsMiddleware(target: Metrics = processMetrics): (req: Request, res: Response, next: NextFunction) => void {
  let matcher: RouteMatcher | null = null;
  return (req, res, next) => {
    const started = performance.now();
    res.once('close', () => {
      // Routes are all registered by the first request (Nest registers them before it listens).
      matcher ??= routeMatcher(routePatterns(req.app));
      const status = res.headersSent ? String(res.statusCode) : CLIENT_CLOSED_STATUS;
      const stream = String(res.getHeader('content-type') ?? '').startsWith('text/event-stream');
      target.httpRequest(req.method, routeLabel(req.route as { path?: unknown } | undefined, req.baseUrl, req.path, matcher, req.method), status, stream ? null : (performance.now() - started) / 1000);
    });
    next();
  };
}

/** The app's routes (path pattern and methods), in registration order (Express 5: `app.router.stack`). */
export function routePatterns(app: Application): RoutePattern[] {
  const stack = (app as unknown as { router?: { stack?: { route?: { path?: unknown; methods?: Record<string, boolean> } }[] } }).router?.stack ?? [];
  return stack.flatMap(({ route }) => {
    if (typeof route?.path !== 'string') return [];
    const methods = Object.keys(route.methods ?? {}).filter((method) => route.methods?.[method]);
    return [{ path: route.path, methods: methods.length > 0 && !methods.includes('_all') ? methods : undefined }];
  });
}
