/** The route label of a request that matched no route (a 404, static assets, a request refused before routing found no route). */
export const UNMATCHED_ROUTE = 'unmatched';

export type RouteMatcher = (path: string, method?: string) => string | null;

/** A route as registered: its path pattern and, when known, the methods it serves (lowercase). */
export type RoutePattern = string | { path: string; methods?: readonly string[] };

/**
 * Matches a raw request path to the first route pattern that routes it, as Express does (patterns
 * in registration order, case-insensitive, an optional trailing slash): `/sessions/0190…/events`
 * becomes `/sessions/:sessionId/events`. Pattern syntax is Express 5's: `:name` one segment,
 * `*name` the rest of the path, `{…}` an optional part. With the request's method, a route of
 * that method wins over an earlier one of another (`POST /admin/sessions/bulk-cancel` is not
 * `GET /admin/sessions/:session_id`); a path no route of its method serves keeps the first
 * pattern of the path (a wrong method is still that route's request).
 */
export function routeMatcher(patterns: readonly RoutePattern[]): RouteMatcher {
  const compiled = patterns.map((entry) => {
    const { path, methods } = typeof entry === 'string' ? { path: entry, methods: undefined } : entry;
    return { pattern: path, methods: methods ? new Set(methods) : null, regex: compilePattern(path) };
  });
  return (path, method) => {
    const matching = compiled.filter(({ regex }) => regex.test(path));
    if (method !== undefined) {
      const verb = method.toLowerCase();
      // Express answers HEAD with the GET route.
      const served = matching.find(({ methods }) => methods === null || methods.has(verb) || (verb === 'head' && methods.has('get')));
      if (served) return served.pattern;
    }
    return matching[0]?.pattern ?? null;
  };
}

/**
 * The `route` label: the pattern of the route that handled the request when there was one (the
 * router records it), else the pattern the path would match (a request refused before routing,
 * e.g. a 401 from the authentication middleware), else `unmatched`. Never the raw path: ids and
 * random paths would make a series each.
 */
export function routeLabel(matched: { path?: unknown } | undefined, baseUrl: string, path: string, matcher: RouteMatcher, method?: string): string {
  if (matched && typeof matched.path === 'string') return `${baseUrl}${matched.path}` || '/';
  return matcher(path, method) ?? UNMATCHED_ROUTE;
}

function compilePattern(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; ) {
    const char = pattern[i]!;
    if (char === ':' || char === '*') {
      let end = i + 1;
      while (end < pattern.length && /[\w$]/.test(pattern[end]!)) end += 1;
      source += char === ':' ? '[^/]+' : '.+';
      i = end;
      continue;
    }
    if (char === '{') source += '(?:';
    else if (char === '}') source += ')?';
    else source += char.replace(/[.+?^$()[\]|\\/]/g, '\\$&');
    i += 1;
  }
  return new RegExp(`^${source.replace(/\\\/$/, '')}\\/?$`, 'i');
}
