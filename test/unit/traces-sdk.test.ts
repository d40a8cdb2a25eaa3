import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentsClient, type SessionTrace } from '#libs/sdk';

// The SDK's traces calls: one page (`client.sessions.traces`) and every trace, page after page
// (`allTraces`), following `last_id` until `has_more` is false.

describe('sdk: a session\'s traces', () => {
  it('reads one page with its query, and walks the pages by their last id', async () => {
    const seen: string[] = [];
    const entry = (id: string): SessionTrace => ({ id, object: 'agent.session.trace', session_id: 's/1', created_at: 1, otlp: { resourceSpans: [] }, yuxi: { truncated: false } });
    const pages = [
      { object: 'list', data: [entry('t3'), entry('t2')], first_id: 't3', last_id: 't2', has_more: true },
      { object: 'list', data: [entry('t1')], first_id: 't1', last_id: 't1', has_more: false },
    ];
    const fakeFetch = (async (request: Request) => {
      const url = new URL(request.url);
      seen.push(`${request.method} ${url.pathname}${url.search}`);
      const body = url.searchParams.get('after') === 't2' ? pages[1] : pages[0];
      return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch;
    const client = new AgentsClient({ baseUrl: 'http://127.0.0.1:9/', apiKey: 'k', fetch: fakeFetch });
    const page = await client.sessions.traces('s/1', { limit: 2, order: 'asc', after: 't0' });
    assert.deepEqual(page.data.map((trace) => trace.id), ['t3', 't2']);
    const all: string[] = [];
    for await (const trace of client.sessions.allTraces('s/1')) all.push(trace.id);
    assert.deepEqual(all, ['t3', 't2', 't1']);
    assert.deepEqual(seen, [
      'GET /api/v1/agents/sessions/s%2F1/traces?limit=2&order=asc&after=t0',
      'GET /api/v1/agents/sessions/s%2F1/traces?limit=20',
      'GET /api/v1/agents/sessions/s%2F1/traces?limit=20&after=t2',
    ]);
  });
});
