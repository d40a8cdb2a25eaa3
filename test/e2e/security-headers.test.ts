import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { bootstrap, createSessionAs, headersOf } from '../support/identity.js';

/** The response head of one request (the body is not waited for: an SSE stream never ends). */
async function head(path: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers }> {
  const controller = new AbortController();
  const res = await fetch(`${env.apiUrl}${path}`, { ...init, signal: controller.signal });
  controller.abort();
  return { status: res.status, headers: res.headers };
}

describe('security headers', () => {
  it('sends no-store and nosniff on every API response: success, errors of every layer, SSE', async () => {
    const session = await createSessionAs(bootstrap);
    const auth = headersOf(bootstrap);
    const cases: [string, string, RequestInit, number][] = [
      ['a read', `${API}/sessions?limit=1`, { headers: auth }, 200],
      ['no credentials (auth middleware)', `${API}/sessions`, {}, 401],
      ['a bad credential', `${API}/sessions`, { headers: { authorization: 'Bearer not-a-key-at-all-xxxxxxxx' } }, 401],
      ['an unknown route', `${API}/no-such-route`, { headers: auth }, 404],
      ['malformed JSON (body parser)', `${API}/sessions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'hdr-1' }, body: '{' }, 422],
      ['an unknown session', `${API}/sessions/00000000-0000-4000-8000-000000000000`, { headers: auth }, 404],
      ['a wrong method (router)', `${API}/sessions`, { method: 'PUT', headers: auth }, 405],
      ['a body that is not JSON (content type gate)', `${API}/sessions`, { method: 'POST', headers: { ...auth, 'content-type': 'text/plain', 'idempotency-key': 'hdr-2' }, body: 'hi' }, 415],
      ['an invalid field (validation)', `${API}/sessions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'hdr-3' }, body: '{"agent_id":"default-chatbot","surprise":1}' }, 422],
      ['a body past the limit (body size gate)', '/api/v1/admin/api-keys', { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }) }, 413],
      ['the event stream', `${API}/sessions/${session.id}/events`, { headers: { ...auth, accept: 'text/event-stream' } }, 200],
    ];
    for (const [name, path, init, status] of cases) {
      const res = await head(path, init);
      assert.equal(res.status, status, name);
      assert.equal(res.headers.get('cache-control')?.split(',')[0]?.trim(), 'no-store', `${name}: Cache-Control ${res.headers.get('cache-control')}`);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', name);
    }
  });

  it('puts a CSP that forbids framing on the docs page', async () => {
    for (const path of ['/docs', '/docs/']) {
      const res = await head(path);
      assert.equal(res.status, 200, path);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.match(csp, /frame-ancestors 'none'/, `${path}: ${csp}`);
      assert.match(csp, /default-src 'none'/, csp);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    }
  });
});
