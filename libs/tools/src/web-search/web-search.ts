import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, type WebSearchSettings } from '#libs/config';
import { createGuardedFetch, type FetchFunction, isOutboundBlocked } from '#libs/outbound';
import { SecretsStore } from '#libs/secrets';
import type { ToolOutcome } from '../tool.types.js';
import { formatResults, parseResults } from './results.js';

/** Bytes one provider answer may carry: a page of results is a few tens of KB. */
export const WEB_SEARCH_MAX_RESPONSE_BYTES = 2 * 1024 * 1024;
export const MAX_QUERY_CHARS = 400;

/** What a search is asked: the query and how many results at most. */
export interface WebSearchQuery {
  query: string;
  count: number;
}

/** A provider's request for a query: where to send it and how (method, headers with the key, body). */
interface ProviderRequest {
  url: URL;
  init: RequestInit;
}

/** A failure the model is told of, in words it can act on (try again, tell the user). */
class SearchFailure extends Error {}

/**
 * The `web_search` builtin: the deployment's one provider (WEB_SEARCH_PROVIDER), behind one
 * interface, each request through the outbound address policy with a response bound and a timeout.
 * Whatever goes wrong at the provider (refused, slow, too large, not its JSON) is an error output
 * for the model, never a failed run; only the call's own abort (cancel, lost lease) rejects.
 */
@Injectable()
export class WebSearch {
  private readonly logger = new Logger(WebSearch.name);
  private readonly settings: WebSearchSettings | null;
  private readonly fetch: FetchFunction | null;

  constructor(
    config: AppConfig,
    private readonly secrets: SecretsStore,
  ) {
    this.settings = config.webSearch;
    // The provider is the deployment's, not a caller's, but its address is checked all the same
    // (at connect time too, DNS rebinding): WEB_SEARCH_ALLOWED_HOSTS admits a private instance.
    this.fetch = this.settings
      ? createGuardedFetch({ allowPrivate: false, allowedHosts: this.settings.allowedHosts, maxResponseBytes: WEB_SEARCH_MAX_RESPONSE_BYTES })
      : null;
  }

  /** Whether a provider is configured: without one the tool is not offered, and a definition naming it is refused. */
  get enabled(): boolean {
    return this.settings !== null;
  }

  /** The most results one search returns (the tool's `count` is bounded by it). */
  get maxResults(): number {
    return this.settings?.maxResults ?? 1;
  }

  /** Runs one search for the model: `{query, count?}` as the tool's schema says. */
  async run(args: Record<string, unknown>, signal: AbortSignal): Promise<ToolOutcome> {
    if (!this.settings || !this.fetch) return { success: false, output: 'web_search error: this deployment has no search provider' };
    const query = typeof args.query === 'string' ? args.query.trim() : '';
    if (query === '' || query.length > MAX_QUERY_CHARS) return { success: false, output: `web_search error: query must be 1 to ${MAX_QUERY_CHARS} characters` };
    const count = Number.isInteger(args.count) ? Math.min(Math.max(args.count as number, 1), this.settings.maxResults) : this.settings.maxResults;
    try {
      const results = await this.search(this.settings, this.fetch, { query, count }, signal);
      return { success: true, output: formatResults(query, results) };
    } catch (error) {
      // The call's own end (cancel, lease lost, shutdown) is not a provider's failure.
      if (signal.aborted) throw signal.reason;
      if (error instanceof SearchFailure) return { success: false, output: `web_search error: ${error.message}` };
      throw error;
    }
  }

  private async search(settings: WebSearchSettings, fetchFn: FetchFunction, query: WebSearchQuery, signal: AbortSignal) {
    const request = providerRequest(settings, query, await this.apiKey(settings));
    const timeout = AbortSignal.timeout(settings.timeoutMs);
    const bounded = AbortSignal.any([signal, timeout]);
    let response: Response;
    let body: unknown;
    try {
      response = await fetchFn(request.url, { ...request.init, signal: bounded, redirect: 'follow' });
      const text = await response.text();
      if (!response.ok) throw new SearchFailure(statusMessage(response.status));
      try {
        body = JSON.parse(text);
      } catch {
        throw new SearchFailure('the search provider answered something that is not JSON');
      }
    } catch (error) {
      if (error instanceof SearchFailure || signal.aborted) throw error;
      if (timeout.aborted) throw new SearchFailure(`the search provider did not answer within ${Math.round(settings.timeoutMs / 100) / 10} s; try again later`);
      if (isOutboundBlocked(error)) {
        this.logger.warn(`web_search: the provider's address is refused by the outbound policy (WEB_SEARCH_ALLOWED_HOSTS admits a private instance): ${(error as Error).message}`);
        throw new SearchFailure("the search provider's address is not allowed by this deployment");
      }
      if (isTooLarge(error)) throw new SearchFailure('the search provider answered more than this deployment reads');
      this.logger.warn(`web_search: the provider could not be reached: ${(error as Error).message}`);
      throw new SearchFailure('the search provider could not be reached; try again later');
    }
    const results = parseResults(settings.provider, body, query.count);
    if (results === null) throw new SearchFailure('the search provider answered in a shape this deployment does not read');
    return results;
  }

  /** The key: the setting, or the shared secret it names, read at each search (rotations apply at once). */
  private async apiKey(settings: WebSearchSettings): Promise<string | null> {
    if (settings.apiKey) return settings.apiKey;
    if (!settings.apiKeySecret) return null;
    let secret: { value: string } | null;
    try {
      secret = await this.secrets.resolve(null, settings.apiKeySecret);
    } catch (error) {
      this.logger.warn(`web_search: the secret ${settings.apiKeySecret} cannot be read: ${(error as Error).message}`);
      secret = null;
    }
    if (!secret) {
      this.logger.warn(`web_search: no shared secret named "${settings.apiKeySecret}" (WEB_SEARCH_API_KEY_SECRET)`);
      throw new SearchFailure("the search provider's key is not available on this deployment");
    }
    return secret.value;
  }
}

/** The request each provider expects for a query. */
export function providerRequest(settings: Pick<WebSearchSettings, 'provider' | 'url'>, query: WebSearchQuery, apiKey: string | null): ProviderRequest {
  const base = settings.url.endsWith('/') ? settings.url : `${settings.url}/`;
  switch (settings.provider) {
    case 'searxng': {
      // GET <base>/search?q=…&format=json: the instance must list `json` among its formats.
      const url = new URL('search', base);
      url.searchParams.set('q', query.query);
      url.searchParams.set('format', 'json');
      const headers: Record<string, string> = { accept: 'application/json' };
      if (apiKey) headers.authorization = `Bearer ${apiKey}`;
      return { url, init: { method: 'GET', headers } };
    }
    case 'brave': {
      const url = new URL('res/v1/web/search', base);
      url.searchParams.set('q', query.query);
      url.searchParams.set('count', String(query.count));
      return { url, init: { method: 'GET', headers: { accept: 'application/json', 'x-subscription-token': apiKey ?? '' } } };
    }
    case 'tavily':
      return {
        url: new URL('search', base),
        init: {
          method: 'POST',
          headers: { accept: 'application/json', 'content-type': 'application/json', authorization: `Bearer ${apiKey ?? ''}` },
          body: JSON.stringify({ query: query.query, max_results: query.count, search_depth: 'basic' }),
        },
      };
  }
}

function statusMessage(status: number): string {
  if (status === 401 || status === 403) return `the search provider refused this deployment's credentials (HTTP ${status})`;
  if (status === 429) return 'the search provider is rate limiting this deployment (HTTP 429); try again later';
  return `the search provider answered HTTP ${status}; try again later`;
}

function isTooLarge(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if ((current as { code?: unknown }).code === 'RESPONSE_TOO_LARGE') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
