import { type INestApplication, Logger } from '@nestjs/common';
import express, { type NextFunction, type Request, type Response } from 'express';
import { Authenticator, LargeBodyGate, type Principal, RateLimits } from '#libs/auth';
import { httpLogger, withLogContext } from '#libs/config';
import { DomainError, createValidationPipe, requestIdMiddleware, requestIdOf, sendError, toDomainError } from '#libs/errors';
import { httpMetricsMiddleware } from '#libs/metrics';
import { gatherMetadataFilter } from '#libs/protocol';
import { consoleStatic } from './console-static.js';
import { requestSpans } from './request-span.js';
import { securityHeaders } from './security-headers.js';

/** Large bodies are accepted only where inline images travel: session create and event submission. */
const LARGE_BODY_ROUTE = /^\/api\/v1\/agents\/sessions(\/[^/]+\/events)?\/?$/i;
/** The one route that takes multipart/form-data (its controller reads and bounds the body). */
const UPLOAD_ROUTE = /^\/api\/v1\/agents\/files\/?$/i;
/** The session list, whose `metadata[key]=value` filter is gathered into one query field. */
const SESSION_LIST_ROUTE = /^\/api\/v1\/agents\/sessions\/?$/i;

const AGENTS_PREFIX = '/api/v1/agents';
const DOUBLED_AGENTS_PREFIX = `${AGENTS_PREFIX}/agents/`;

/**
 * The official OpenAI SDK appends `/agents/sessions/…` to its base URL, whose right value is
 * `<origin>/api/v1`; given the API root `<origin>/api/v1/agents` (what `npm start` prints for curl)
 * it asks for `/api/v1/agents/agents/sessions/…`. No route lives under `/api/v1/agents/agents/`
 * (saved agents have no sub-resources), so that prefix is read as `/api/v1/agents/`: both base URLs
 * work. `/api/v1/agents/agents` itself stays the saved agent of that id.
 */
function collapseDoubledAgentsPrefix(req: Request, _res: Response, next: NextFunction): void {
  if (req.url.startsWith(DOUBLED_AGENTS_PREFIX)) req.url = AGENTS_PREFIX + req.url.slice(`${AGENTS_PREFIX}/agents`.length);
  next();
}

/**
 * HTTP concerns of the api: request ids first, then authentication and rate limits — before any
 * body is read, so an unauthenticated or throttled request costs no parse (OWASP API4) — and the
 * per-user bound on large bodies in flight (MAX_CONCURRENT_LARGE_BODIES), then JSON parsing with per-route limits whose failures use the public error shape, and the
 * validation pipe.
 */
export function configureHttp(app: INestApplication, bodyLimit: string, maxConcurrentLargeBodies = 0): void {
  app.use(collapseDoubledAgentsPrefix);
  // The request's span first (tracing on only), so that every later middleware and the handler run in it.
  const spans = requestSpans();
  if (spans) app.use(spans.start);
  app.use(requestIdMiddleware);
  app.use(securityHeaders);
  app.use('/console', consoleStatic());
  app.use(httpMetricsMiddleware()); // before auth: refusals by the middleware below are counted too
  // One log line per request (with its request_id), and the id on every line logged while serving it.
  app.use(httpLogger('api', requestIdOf));
  app.use(bindRequestLogContext);
  app.use(authenticate(app.get(Authenticator), app.get(RateLimits)));
  app.use(refuseUndecodablePaths);
  app.use(canonicaliseIds);
  app.use(gatherSessionListMetadata);
  // After authentication (the principal is known), before the body parser (nothing read yet).
  app.use(new LargeBodyGate(maxConcurrentLargeBodies).middleware((req) => req.method === 'POST' && (LARGE_BODY_ROUTE.test(req.path) || UPLOAD_ROUTE.test(req.path))));
  const large = express.json({ limit: bodyLimit });
  const small = express.json({ limit: '1mb' });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (hasBody(req) && !req.is('application/json')) {
      if (req.method === 'POST' && UPLOAD_ROUTE.test(req.path) && req.is('multipart/form-data')) return next();
      return sendError(res, new DomainError('unsupported_media_type', UPLOAD_ROUTE.test(req.path) ? 'Send the file as multipart/form-data' : 'Send the request body as application/json'));
    }
    // The large limit for the two POSTs that carry inline images only (the gate above counts those):
    // another method on their paths is read under the small one, whatever routing answers after.
    return (req.method === 'POST' && LARGE_BODY_ROUTE.test(req.path) ? large : small)(req, res, next);
  });
  // Postgres text and jsonb cannot hold U+0000, nor jsonb a lone surrogate; reject them here as field errors rather than fail the write.
  app.use((req: Request, res: Response, next: NextFunction) => {
    let found: { field: string; problem: string } | null;
    try {
      found = unstorableString(req.body as unknown, '');
    } catch (error) {
      if (!(error instanceof BodyTooDeep)) throw error;
      return sendError(res, DomainError.validation([{ field: error.path || 'body', errors: [`must not nest deeper than ${MAX_BODY_DEPTH} levels`] }]));
    }
    if (found === null) return next();
    return sendError(res, DomainError.validation([{ field: found.field || 'body', errors: [found.problem] }]));
  });
  app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
    const type = (error as { type?: string } | null)?.type;
    if (type === 'entity.too.large') return sendError(res, new DomainError('payload_too_large', `Request body exceeds the limit`));
    if (type === 'entity.parse.failed') return sendError(res, new DomainError('invalid_json', 'Request body is not valid JSON'));
    return next(error);
  });
  // Again after the body was read: the body parser resumes the chain from the socket's callbacks.
  app.use(bindRequestLogContext);
  if (spans) app.use(spans.rebind);
  app.useGlobalPipes(createValidationPipe());
}

/**
 * `GET /sessions?metadata[key]=value`: Express 5 reads queries flat, so the pairs are gathered into
 * one `metadata` object here, which the list's query DTO validates. Elsewhere such keys stay
 * unknown fields (422).
 */
function gatherSessionListMetadata(req: Request, _res: Response, next: NextFunction): void {
  if (req.method !== 'GET' || !SESSION_LIST_ROUTE.test(req.path)) return next();
  const query = req.query as Record<string, unknown>;
  if (!Object.keys(query).some((name) => name.startsWith('metadata['))) return next();
  // req.query is a getter that parses the URL on every read: the gathered object shadows it.
  Object.defineProperty(req, 'query', { value: gatherMetadataFilter(query), configurable: true, enumerable: true, writable: true });
  next();
}

/** What the rest of the request logs carries its request_id (see withLogContext). */
function bindRequestLogContext(_req: Request, res: Response, next: NextFunction): void {
  withLogContext({ request_id: requestIdOf(res) }, next);
}

/**
 * Everything under /api needs a principal; health and docs do not. A failed authentication counts
 * against the client address: past AUTH_FAILURE_LIMIT_PER_MINUTE, further bad credentials from it
 * are answered 429 with Retry-After (only failures are counted: valid credentials keep working).
 */
function authenticate(authenticator: Authenticator, limits: RateLimits) {
  const logger = new Logger('Auth');
  return (req: Request, res: Response, next: NextFunction): void => {
    // Express routes case-insensitively: so does this gate.
    if (!req.path.toLowerCase().startsWith('/api/')) return next();
    void (async () => {
      try {
        const throttled = (retryAfter: number | null): void => {
          if (retryAfter === null) return;
          throw new DomainError('rate_limited', `Too many requests; retry in ${retryAfter} s`, { retry_after: retryAfter });
        };
        let principal: Principal;
        try {
          principal = await authenticator.authenticate(
            req.header('authorization'),
            req.header('x-end-user-id'),
            async (caller) => throttled(await limits.consumeCaller(caller)),
            async (caller) => throttled(await limits.consumeNewEndUser(caller.actorId, caller.appId)),
          );
        } catch (error) {
          if (!(error instanceof DomainError && error.code === 'unauthorized')) throw error;
          const retryAfter = await limits.consumeAuthFailure(req.ip ?? req.socket.remoteAddress ?? 'unknown');
          if (retryAfter === null) throw error;
          throw new DomainError('authentication_throttled', `Too many failed authentications from this address; retry in ${retryAfter} s`, { retry_after: retryAfter });
        }
        throttled(await limits.consumeEndUser(principal));
        (req as Request & { principal?: Principal }).principal = principal;
        return next();
      } catch (error) {
        return sendError(res, toDomainError(error, req, logger));
      }
    })();
  };
}

/**
 * A path that is not percent-encoded UTF-8 (`%ED%A0%80`, `%zz`) or that holds U+0000 names no
 * resource: 404, as any unknown id does, rather than the router's failure to decode the parameter
 * or a query that Postgres refuses (its text cannot hold NUL).
 */
function refuseUndecodablePaths(req: Request, res: Response, next: NextFunction): void {
  let path: string;
  try {
    path = decodeURIComponent(req.path);
  } catch {
    return sendError(res, new DomainError('not_found', 'Nothing exists at this path: it is not valid percent-encoded UTF-8'));
  }
  if (path.includes('\u0000')) return sendError(res, new DomainError('not_found', 'Nothing exists at this path: it holds the NUL character'));
  next();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A UUID in the path is case-insensitive (Postgres reads `0190…AB` and `0190…ab` as one id) but
 * everything derived from it is not: idempotency scopes, storage keys, URLs written into items.
 * Rewriting it once here, before routing, in lowercase and without percent-escapes (`%41` is `A`
 * once Express decodes the parameter), makes every spelling of an id the same resource in every
 * respect rather than a second idempotency scope, or a 500 where a key builder insists on lowercase.
 */
function canonicaliseIds(req: Request, _res: Response, next: NextFunction): void {
  const query = req.url.indexOf('?');
  const path = query === -1 ? req.url : req.url.slice(0, query);
  if (/[A-F%]/.test(path)) {
    const canonical = path
      .split('/')
      .map((segment) => {
        if (!/[A-F%]/.test(segment)) return segment;
        let decoded: string;
        try {
          decoded = decodeURIComponent(segment);
        } catch {
          return segment; // refuseUndecodablePaths answered it already
        }
        return UUID.test(decoded) ? decoded.toLowerCase() : segment;
      })
      .join('/');
    if (canonical !== path) req.url = canonical + (query === -1 ? '' : req.url.slice(query));
  }
  next();
}

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** How deep a JSON body may nest: far beyond any real request, far below a stack overflow. */
const MAX_BODY_DEPTH = 64;

/** A UTF-16 half without its other half: JSON can carry it (`"\\ud800"`), UTF-8 and jsonb cannot. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function stringProblem(value: string): string | null {
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(value)) return 'must be well-formed Unicode (no lone surrogate)';
  return null;
}

/**
 * The path ('' for the body itself) of the first string, key or value, that Postgres cannot store,
 * and why; null if none. Iterative with a depth limit: a body of deeply nested arrays is refused as
 * too deep instead of overflowing the stack.
 */
function unstorableString(value: unknown, path: string): { field: string; problem: string } | null {
  const stack: [unknown, string, number][] = [[value, path, 0]];
  while (stack.length > 0) {
    const [current, at, depth] = stack.pop()!;
    if (typeof current === 'string') {
      const problem = stringProblem(current);
      if (problem) return { field: at, problem };
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth >= MAX_BODY_DEPTH) throw new BodyTooDeep(at);
    const entries = Array.isArray(current) ? current.map((entry, index) => [`${at}[${index}]`, entry, null] as const) : Object.entries(current).map(([key, entry]) => [at ? `${at}.${key}` : key, entry, key] as const);
    for (let k = entries.length - 1; k >= 0; k--) {
      const [childPath, entry, key] = entries[k]!;
      const problem = key === null ? null : stringProblem(key);
      if (problem) return { field: at, problem };
      stack.push([entry, childPath, depth + 1]);
    }
  }
  return null;
}

class BodyTooDeep extends Error {
  constructor(readonly path: string) {
    super('body nested too deeply');
  }
}
