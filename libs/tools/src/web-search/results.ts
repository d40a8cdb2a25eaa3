// What a search provider answers, read into one shape, and what the model is given of it. Pure:
// test/components/web-search.test.ts reads each provider's JSON and the formatted output.
import type { WebSearchProviderName } from '#libs/config';

/** One result as the model sees it. */
export interface WebSearchResult {
  title: string;
  url: string;
  snippet: string;
}

const MAX_TITLE = 300;
const MAX_SNIPPET = 1_000;
const MAX_URL = 2_048;

// C0 and C1 controls, DEL, and the bidirectional overrides that could make a text read otherwise.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ', '#39': "'", '#x27': "'" };

/**
 * A provider's text as plain text: Brave marks matches with `<strong>`, others may send entities;
 * tags are dropped, the common entities decoded, controls removed, whitespace folded, cut at `max`.
 */
export function plainText(raw: unknown, max: number): string {
  if (typeof raw !== 'string') return '';
  // Cut first: every pass below reads a bounded text, whatever the provider chose to send.
  const text = raw
    .slice(0, max * 4)
    .replace(/<[^<>]{0,200}>/g, '')
    .replace(/&(amp|lt|gt|quot|apos|nbsp|#39|#x27);/g, (_, name: string) => ENTITIES[name])
    .replace(CONTROL, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** An http(s) URL as the provider gave it, or null: a result the model cannot cite is left out. */
function resultUrl(raw: unknown): string | null {
  if (typeof raw !== 'string' || raw.length > MAX_URL) return null;
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** The list of result objects where each provider puts it: SearXNG and Tavily `results`, Brave `web.results`. */
function resultList(provider: WebSearchProviderName, body: unknown): unknown[] | null {
  if (typeof body !== 'object' || body === null) return null;
  const root = body as Record<string, unknown>;
  if (provider === 'brave') {
    // A query without web results answers no `web` at all.
    if (root.web === undefined) return root.type === 'search' ? [] : null;
    const web = root.web as Record<string, unknown> | null;
    return web && Array.isArray(web.results) ? web.results : null;
  }
  return Array.isArray(root.results) ? root.results : null;
}

/**
 * The results of a provider's JSON answer, in its order, at most `limit`, each with a title, an
 * http(s) URL and a snippet (SearXNG and Tavily `content`, Brave `description`); entries without a
 * usable URL are skipped, duplicates of a URL kept once. Null when the answer is not that
 * provider's shape at all.
 */
export function parseResults(provider: WebSearchProviderName, body: unknown, limit: number): WebSearchResult[] | null {
  const list = resultList(provider, body);
  if (list === null) return null;
  const results: WebSearchResult[] = [];
  const seen = new Set<string>();
  for (const entry of list) {
    if (results.length >= limit) break;
    if (typeof entry !== 'object' || entry === null) continue;
    const item = entry as Record<string, unknown>;
    const url = resultUrl(item.url);
    if (!url || seen.has(url)) continue;
    seen.add(url);
    const snippet = plainText(provider === 'brave' ? item.description : item.content, MAX_SNIPPET);
    results.push({ title: plainText(item.title, MAX_TITLE) || url, url, snippet });
  }
  return results;
}

/** How the model is told to cite: each result has a number, and its URL is what a citation links to. */
export const CITATION_NOTE = 'Cite the results you use as [n](url), with the number and URL of each result.';

/**
 * The tool output: JSON the model reads, each result numbered from 1 so it can cite it as
 * `[n](url)`. An empty list says so, rather than leaving the model to guess.
 */
export function formatResults(query: string, results: readonly WebSearchResult[]): string {
  if (results.length === 0) return JSON.stringify({ query, results: [], note: 'No results: try other words.' });
  return JSON.stringify({ query, results: results.map((result, index) => ({ n: index + 1, ...result })), note: CITATION_NOTE });
}
