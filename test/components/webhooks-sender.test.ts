// The webhook sender against a local HTTP server: what one attempt comes to (status, redirect,
// timeout, excerpt), and the address guard for literal addresses, which no DNS lookup sees.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { guardedLookup, WebhookSender } from '#libs/webhooks';

describe('WebhookSender', () => {
  let server: Server;
  let base: string;
  const open = new WebhookSender(guardedLookup(true), true);
  const guarded = new WebhookSender(guardedLookup(false), false);

  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/redirect') return void res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      if (req.url === '/slow') return void setTimeout(() => res.writeHead(200).end('late'), 1_000).unref();
      if (req.url === '/long') return void res.writeHead(500, { 'retry-after': '120' }).end('x'.repeat(5_000));
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ got: body, id: req.headers['webhook-id'] })));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    open.close();
    guarded.close();
    server.closeAllConnections();
    server.close();
  });

  it('posts the body with the headers given, and reads a 2xx as success with an excerpt', async () => {
    const result = await open.send({ url: `${base}/ok`, headers: { 'webhook-id': 'evt_1' }, body: '{"a":1}', timeoutMs: 2_000 });
    assert.equal(result.outcome, 'succeeded');
    assert.equal(result.statusCode, 200);
    assert.deepEqual(JSON.parse(result.responseExcerpt), { got: '{"a":1}', id: 'evt_1' });
    assert.equal(result.error, null);
  });

  it('does not follow a redirect', async () => {
    const result = await open.send({ url: `${base}/redirect`, headers: {}, body: '{}', timeoutMs: 2_000 });
    assert.deepEqual([result.outcome, result.statusCode, result.error], ['failed', 302, 'redirects are not followed']);
  });

  it('keeps 1,024 characters of a long answer, and its Retry-After', async () => {
    const result = await open.send({ url: `${base}/long`, headers: {}, body: '{}', timeoutMs: 2_000 });
    assert.deepEqual([result.outcome, result.statusCode, result.responseExcerpt.length, result.retryAfter], ['failed', 500, 1024, '120']);
  });

  it('times out a receiver slower than the timeout, and waits for the same receiver under a longer one', async () => {
    // The receiver answers 1 s after the request arrives; the sender's timer (same process, same
    // event loop) was armed before, so 300 ms always fires first and 5 s never does.
    const result = await open.send({ url: `${base}/slow`, headers: {}, body: '{}', timeoutMs: 300 });
    assert.deepEqual([result.outcome, result.statusCode], ['timeout', null]);
    const patient = await open.send({ url: `${base}/slow`, headers: {}, body: '{}', timeoutMs: 5_000 });
    assert.deepEqual([patient.outcome, patient.statusCode, patient.responseExcerpt], ['succeeded', 200, 'late']);
  });

  it('refuses a private literal address, and a name resolving to one, where private networks are not allowed', async () => {
    for (const url of [`${base}/ok`, 'http://[::1]:9/x', 'http://169.254.169.254/latest']) {
      const result = await guarded.send({ url, headers: {}, body: '{}', timeoutMs: 2_000 });
      assert.equal(result.outcome, 'blocked', url);
    }
    const named = await guarded.send({ url: `http://localhost:${new URL(base).port}/ok`, headers: {}, body: '{}', timeoutMs: 2_000 });
    assert.equal(named.outcome, 'blocked');
  });

  it('reports a refused connection as a network error', async () => {
    const result = await open.send({ url: 'http://127.0.0.1:9/x', headers: {}, body: '{}', timeoutMs: 2_000 });
    assert.equal(result.outcome, 'network_error');
    assert.match(result.error ?? '', /ECONNREFUSED/);
  });
});
