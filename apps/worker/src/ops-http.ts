import { createServer, type IncomingMessage, type Server } from 'node:http';

/** An answer of the worker's ops port: a JSON value, or a string sent as is (e.g. Prometheus text). */
export interface OpsResponse {
  status: number;
  body: unknown;
  contentType?: string;
}

export type OpsRoute = (req: IncomingMessage) => OpsResponse | Promise<OpsResponse>;

/** Path (without query) → handler; adding an endpoint is one entry. */
export type OpsRoutes = Record<string, OpsRoute>;

/**
 * The worker's small HTTP server for orchestrators and scrapers (health, metrics): GET/HEAD only,
 * no framework. Resolves once listening; rejects when the port cannot be bound.
 */
export function startOpsHttp(port: number, routes: OpsRoutes): Promise<Server> {
  const server = createServer((req, res) => {
    void answer(routes, req).then(
      ({ status, body, contentType }) => {
        const text = typeof body === 'string' ? body : JSON.stringify(body);
        res.writeHead(status, { 'content-type': contentType ?? (typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json'), 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (error: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(error) }));
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

async function answer(routes: OpsRoutes, req: IncomingMessage): Promise<OpsResponse> {
  const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '') || '/';
  const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
  if (!route) return { status: 404, body: { error: 'not found', routes: Object.keys(routes) } };
  if (req.method !== 'GET' && req.method !== 'HEAD') return { status: 405, body: { error: 'method not allowed' } };
  return route(req);
}
