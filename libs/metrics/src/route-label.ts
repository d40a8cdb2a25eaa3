/** The route label of a request that matched no route (a 404, static assets, a request refused before routing found no route). */
export const UNMATCHED_ROUTE = 'unmatched';

export type RouteMatcher = (path: string) => string | null;

/**
 * Matches a raw request path to the first route pattern that routes it, as Express does (patterns
 * in registration order, case-insensitive, an optional trailing slash): `/sessions/0190…/events`
 * becomes `/sessions/:sessionId/events`. Pattern syntax is Express 5's: `:name` one segment,
 * `*name` the rest of the path, `{…}` an optional part.
 */
export function routeMatcher(patterns: readonly string[]): RouteMatcher {
  const compiled = patterns.map((pattern) => ({ pattern, regex: compilePattern(pattern) }));
  return (path) => compiled.find(({ regex }) => regex.test(path))?.pattern ?? null;
}

/**
 * The `route` label: the pattern of the route that handled the request when there was one (the
 * router records it), else the pattern the path would match (a request refused before routing,
 * e.g. a 401 from the authentication middleware), else `unmatched`. Never the raw path: ids and
 * random paths would make a series each.
 */
export function routeLabel(matched: { path?: unknown } | undefined, baseUrl: string, path: string, matcher: RouteMatcher): string {
  if (matched && typeof matched.path === 'string') return `${baseUrl}${matched.path}` || '/';
  return matcher(path) ?? UNMATCHED_ROUTE;
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
