import { parseExposition } from './metrics.js';

// What scripts/test.mjs checks after the suite: every status the api answered while the tests ran
// (its `yuxi_http_requests_total` counter, by method, route pattern and status) is declared in the
// OpenAPI document for that operation. Pure functions, so the rules are unit-tested on their own.

/** How often one replica answered one (method, route pattern, status). */
export interface StatusSample {
  method: string;
  route: string;
  status: string;
  count: number;
}

/** A status the document does not account for. */
export interface StatusFinding extends StatusSample {
  reason: string;
}

/** The part of an OpenAPI document the audit reads. */
export interface DocumentLike {
  paths: Record<string, Record<string, unknown>>;
}

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

/** The route label of a request that matched no route (libs/metrics route-label.ts). */
export const UNMATCHED = 'unmatched';

/** The metrics label of a request whose client left before any response (not an HTTP status). */
const CLIENT_CLOSED = '499';

/**
 * Statuses answered where the document has no operation, on purpose:
 * - no route (`unmatched`): 404 route_not_found; the Swagger UI's static assets (200, 304); and
 *   what the middleware in front of routing answers whatever the path (401, 429; 404 for a path
 *   that is not UTF-8 or holds NUL; for a body: 415, 413, 422 invalid_json).
 * - a real path with a method it does not take: 405 with Allow, or the same middleware refusals.
 * - the document itself and the Swagger UI (`/openapi.json`, `/docs…`): 200, 304.
 */
const BEFORE_ROUTING = ['401', '404', '413', '415', '422', '429'];
const UNMATCHED_STATUSES = new Set(['200', '304', ...BEFORE_ROUTING]);
const WRONG_METHOD_STATUSES = new Set(['405', ...BEFORE_ROUTING]);
const DOCUMENT_ROUTE = /^\/(openapi\.json|docs)(\/|$)/;
const DOCUMENT_ROUTE_STATUSES = new Set(['200', '304']);

/** `/sessions/:session_id/events` → `/sessions/{session_id}/events` (the document's templates). */
export function toPathTemplate(route: string): string {
  return route.replace(/:(\w+)/g, '{$1}');
}

/** The `yuxi_http_requests_total` samples of one scrape of an api's /metrics. */
export function statusSamples(exposition: string): StatusSample[] {
  return parseExposition(exposition)
    .samples.filter((s) => s.name === 'yuxi_http_requests_total' && s.value > 0)
    .map((s) => ({ method: s.labels.method ?? '', route: s.labels.route ?? '', status: s.labels.status ?? '', count: s.value }));
}

/** The samples of several replicas, summed per (method, route, status). */
export function mergeSamples(...scrapes: StatusSample[][]): StatusSample[] {
  const merged = new Map<string, StatusSample>();
  for (const sample of scrapes.flat()) {
    const key = `${sample.method} ${sample.route} ${sample.status}`;
    const seen = merged.get(key);
    if (seen) seen.count += sample.count;
    else merged.set(key, { ...sample });
  }
  return [...merged.values()];
}

/**
 * Every sample whose status the document does not declare for its operation, and every route the
 * document lacks (outside the deliberate cases above). A 5xx other than 503 is always a finding:
 * the suite runs on a healthy stack, and no input may produce one, declared or not.
 */
export function undeclaredStatuses(document: DocumentLike, samples: StatusSample[]): StatusFinding[] {
  const findings: StatusFinding[] = [];
  for (const sample of samples) {
    const reason = auditSample(document, sample);
    if (reason) findings.push({ ...sample, reason });
  }
  const key = (f: StatusFinding) => `${f.route} ${f.method} ${f.status}`;
  return findings.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

function auditSample(document: DocumentLike, { method, route, status }: StatusSample): string | null {
  if (status === CLIENT_CLOSED) return null;
  if (/^5\d\d$/.test(status) && status !== '503') return 'a server error: no request may cause one';
  if (route === UNMATCHED) return UNMATCHED_STATUSES.has(status) ? null : 'not a status of an unknown route';
  if (DOCUMENT_ROUTE.test(route)) return DOCUMENT_ROUTE_STATUSES.has(status) ? null : 'not a status of the document or Swagger UI';
  const item = document.paths[toPathTemplate(route)];
  if (!item) return 'the route is not in the document';
  // Express answers HEAD with the GET handler.
  const verb = method.toLowerCase() === 'head' && !item.head ? 'get' : method.toLowerCase();
  const operation = OPERATION_METHODS.includes(verb) ? (item[verb] as { responses?: Record<string, unknown> } | undefined) : undefined;
  if (!operation) return WRONG_METHOD_STATUSES.has(status) ? null : 'not a status of a method the path does not take';
  const responses = operation.responses ?? {};
  if (status in responses || `${status[0]}XX` in responses || 'default' in responses) return null;
  return `not declared (declared: ${Object.keys(responses).join(', ') || 'none'})`;
}

/** One line per finding, for the failure message of `npm test`. */
export function formatFindings(findings: StatusFinding[]): string {
  return findings.map((f) => `  ${f.method} ${f.route} → ${f.status} (×${f.count}): ${f.reason}`).join('\n');
}
