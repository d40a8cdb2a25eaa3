import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import type { SecretsStore } from '#libs/secrets';
import { CITATION_NOTE, formatResults, parseResults, plainText, providerRequest, WebSearch } from '#libs/tools';
import { type FakeSearch, startFakeSearch } from '../support/fake-search.js';

const config = (env: Record<string, string> = {}) => new AppConfig({ DATABASE_URL: 'x', REDIS_URL: 'x', ...env });
/** Shared secrets as SecretsStore.resolve answers them (owner null). */
const secrets = (values: Record<string, string>) =>
  ({ resolve: (owner: string | null, name: string) => Promise.resolve(owner === null && name in values ? { value: values[name], version: 1 } : null) }) as unknown as SecretsStore;
const run = (search: WebSearch, args: Record<string, unknown>) => search.run(args, new AbortController().signal);

describe('web search settings', () => {
  it('is off unless WEB_SEARCH_PROVIDER names a provider', () => {
    assert.equal(config().webSearch, null);
    assert.equal(new WebSearch(config(), secrets({})).enabled, false);
    assert.throws(() => config({ WEB_SEARCH_PROVIDER: 'google' }), /WEB_SEARCH_PROVIDER must be searxng, brave, tavily/);
  });

  it('needs a URL for SearXNG and a key for the commercial APIs, and defaults their URLs', () => {
    assert.throws(() => config({ WEB_SEARCH_PROVIDER: 'searxng' }), /WEB_SEARCH_URL is required/);
    assert.throws(() => config({ WEB_SEARCH_PROVIDER: 'brave' }), /needs its API key/);
    assert.throws(() => config({ WEB_SEARCH_PROVIDER: 'tavily', WEB_SEARCH_API_KEY: 'k', WEB_SEARCH_API_KEY_SECRET: 's' }), /exclusive/);
    assert.throws(() => config({ WEB_SEARCH_PROVIDER: 'searxng', WEB_SEARCH_URL: 'ftp://x' }), /http\(s\) URL/);
    assert.throws(() => config({ WEB_SEARCH_PROVIDER: 'searxng', WEB_SEARCH_URL: 'http://s', WEB_SEARCH_ALLOWED_HOSTS: 'a/b' }), /WEB_SEARCH_ALLOWED_HOSTS/);
    assert.throws(() => config({ WEB_SEARCH_PROVIDER: 'searxng', WEB_SEARCH_URL: 'http://s', WEB_SEARCH_MAX_RESULTS: '21' }), /1 to 20/);
    assert.deepEqual(config({ WEB_SEARCH_PROVIDER: 'brave', WEB_SEARCH_API_KEY_SECRET: 'brave-key' }).webSearch, {
      provider: 'brave',
      url: 'https://api.search.brave.com',
      apiKey: undefined,
      apiKeySecret: 'brave-key',
      timeoutMs: 10_000,
      maxResults: 5,
      allowedHosts: [],
    });
    assert.equal(config({ WEB_SEARCH_PROVIDER: 'tavily', WEB_SEARCH_API_KEY: 'k' }).webSearch?.url, 'https://api.tavily.com');
  });
});

describe('web search results', () => {
  it('reads SearXNG, Brave and Tavily answers into title, URL and snippet, skipping what cannot be cited', () => {
    const searxng = { results: [{ title: 'A', url: 'https://a.example/', content: 'about a' }, { title: 'B', url: 'javascript:alert(1)', content: 'x' }, { url: 'https://a.example/' }, { url: 'https://c.example/c', content: 'c' }] };
    assert.deepEqual(parseResults('searxng', searxng, 10), [
      { title: 'A', url: 'https://a.example/', snippet: 'about a' },
      { title: 'https://c.example/c', url: 'https://c.example/c', snippet: 'c' },
    ]);
    const brave = { type: 'search', web: { results: [{ title: '<strong>Yuxi</strong> docs', url: 'https://y.example', description: 'The <strong>agents</strong> &amp; tools' }] } };
    assert.deepEqual(parseResults('brave', brave, 10), [{ title: 'Yuxi docs', url: 'https://y.example/', snippet: 'The agents & tools' }]);
    assert.deepEqual(parseResults('brave', { type: 'search', query: { original: 'q' } }, 10), [], 'Brave sends no `web` when nothing matched');
    assert.deepEqual(parseResults('tavily', { results: [{ title: 'T', url: 'https://t.example/x', content: 'tav' }] }, 10), [{ title: 'T', url: 'https://t.example/x', snippet: 'tav' }]);
    assert.equal(parseResults('searxng', { results: [1, 2, 3].map((n) => ({ url: `https://${n}.example/` })) }, 2)?.length, 2);
  });

  it('refuses an answer in another shape', () => {
    assert.equal(parseResults('searxng', { hits: [] }, 5), null);
    assert.equal(parseResults('brave', { results: [] }, 5), null);
    assert.equal(parseResults('tavily', 'text', 5), null);
  });

  it('bounds and cleans remote text', () => {
    assert.equal(plainText('a\u0000b\u202e c\n\n d', 100), 'a b c d');
    assert.equal(plainText('x'.repeat(50), 10), `${'x'.repeat(9)}…`);
    assert.equal(plainText(42, 10), '');
  });

  it('numbers the results for the model to cite, and says when there are none', () => {
    const output = JSON.parse(formatResults('q', [{ title: 'A', url: 'https://a.example/', snippet: 's' }]));
    assert.deepEqual(output, { query: 'q', results: [{ n: 1, title: 'A', url: 'https://a.example/', snippet: 's' }], note: CITATION_NOTE });
    assert.deepEqual(JSON.parse(formatResults('q', [])).results, []);
  });

  it('builds each provider\'s request', () => {
    const searx = providerRequest({ provider: 'searxng', url: 'http://s.example/base' }, { query: 'a b', count: 3 }, null);
    assert.equal(searx.url.href, 'http://s.example/base/search?q=a+b&format=json');
    const brave = providerRequest({ provider: 'brave', url: 'https://api.search.brave.com' }, { query: 'q', count: 3 }, 'k');
    assert.equal(brave.url.href, 'https://api.search.brave.com/res/v1/web/search?q=q&count=3');
    assert.equal((brave.init.headers as Record<string, string>)['x-subscription-token'], 'k');
    const tavily = providerRequest({ provider: 'tavily', url: 'https://api.tavily.com' }, { query: 'q', count: 2 }, 'k');
    assert.equal(tavily.init.method, 'POST');
    assert.deepEqual(JSON.parse(String(tavily.init.body)), { query: 'q', max_results: 2, search_depth: 'basic' });
  });
});

describe('WebSearch against a fake provider on the wire', () => {
  let fake: FakeSearch;
  let host: string;
  before(async () => {
    fake = await startFakeSearch(0, { slowMs: 2_000 });
    host = new URL(fake.url).host;
  });
  after(() => fake.close());

  const brave = (env: Record<string, string> = {}, values: Record<string, string> = { 'brave-key': 'k-1' }) =>
    new WebSearch(config({ WEB_SEARCH_PROVIDER: 'brave', WEB_SEARCH_URL: fake.url, WEB_SEARCH_API_KEY_SECRET: 'brave-key', WEB_SEARCH_ALLOWED_HOSTS: host, ...env }), secrets(values));

  it('searches Brave with the key from the named secret, at most the results asked for', async () => {
    const outcome = await run(brave(), { query: 'yuxi', count: 2 });
    assert.equal(outcome.success, true);
    const output = JSON.parse(outcome.output);
    assert.deepEqual(output.results, [
      { n: 1, title: 'First yuxi result', url: 'https://one.example/a?x=1', snippet: 'About yuxi & more' },
      { n: 2, title: 'Second result', url: 'https://two.example/b', snippet: 'Second snippet' },
    ]);
    const request = fake.requests.at(-1)!;
    assert.equal(request.path, '/res/v1/web/search');
    assert.deepEqual(request.params, { q: 'yuxi', count: '2' });
    assert.equal(request.headers['x-subscription-token'], 'k-1');
  });

  it('searches Tavily with the key as a bearer token, within WEB_SEARCH_MAX_RESULTS', async () => {
    const tavily = new WebSearch(config({ WEB_SEARCH_PROVIDER: 'tavily', WEB_SEARCH_URL: fake.url, WEB_SEARCH_API_KEY: 'tv-1', WEB_SEARCH_ALLOWED_HOSTS: host, WEB_SEARCH_MAX_RESULTS: '3' }), secrets({}));
    const outcome = await run(tavily, { query: 'agents', count: 10 });
    assert.equal(JSON.parse(outcome.output).results.length, 3, 'three usable results within the cap of 3');
    const request = fake.requests.at(-1)!;
    assert.equal(request.headers.authorization, 'Bearer tv-1');
    assert.deepEqual(request.body, { query: 'agents', max_results: 3, search_depth: 'basic' });
  });

  it('refuses a provider on a loopback address not in WEB_SEARCH_ALLOWED_HOSTS: nothing is sent', async () => {
    const before = fake.requests.length;
    const outcome = await run(brave({ WEB_SEARCH_ALLOWED_HOSTS: '' }), { query: 'yuxi' });
    assert.deepEqual(outcome, { success: false, output: "web_search error: the search provider's address is not allowed by this deployment" });
    assert.equal(fake.requests.length, before);
  });

  it('tells the model of a provider error, a timeout, an answer it cannot read and a missing key', async () => {
    assert.deepEqual(await run(brave(), { query: 'http-500' }), { success: false, output: 'web_search error: the search provider answered HTTP 500; try again later' });
    assert.deepEqual(await run(brave({ WEB_SEARCH_TIMEOUT_MS: '200' }), { query: 'slow' }), {
      success: false,
      output: 'web_search error: the search provider did not answer within 0.2 s; try again later',
    });
    assert.deepEqual(await run(brave(), { query: 'not-json' }), { success: false, output: 'web_search error: the search provider answered something that is not JSON' });
    assert.deepEqual(await run(brave({}, {}), { query: 'yuxi' }), { success: false, output: "web_search error: the search provider's key is not available on this deployment" });
    assert.deepEqual(JSON.parse((await run(brave(), { query: 'nothing' })).output).results, []);
    assert.equal((await run(brave(), { query: '  ' })).success, false);
  });

  it('rejects with the call\'s own abort, which is no provider failure', async () => {
    const controller = new AbortController();
    const pending = brave().run({ query: 'slow' }, controller.signal);
    controller.abort(new Error('cancelled'));
    await assert.rejects(pending, /cancelled/);
  });
});
