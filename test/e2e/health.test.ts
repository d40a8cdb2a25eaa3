// Health of the api on a healthy stack: liveness names only the process, readiness names each
// dependency (database, redis, workers) in the Terminus format, without credentials. The worker's
// own health port is disabled in this stack (WORKER_HEALTH_PORT=0); the fault suite covers it
// (test/faults/operations.test.ts), together with readiness failing and recovering.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { env } from '../support/env.js';
import { http } from '../support/http.js';

async function get(base: string, path: string): Promise<{ status: number; body: any; cacheControl: string | null }> {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.json(), cacheControl: res.headers.get('cache-control') };
}

/** Polls readiness (at most 60 times, 500 ms apart) until a worker has announced itself. */
async function workerAnnounced(base: string): Promise<void> {
  let last: unknown;
  for (let attempt = 0; attempt < 60; attempt++) {
    const res = await get(base, '/health/ready');
    if (res.body?.details?.workers?.status === 'up') return;
    last = res.body;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  assert.fail(`no worker announced itself within 30 s: ${JSON.stringify(last)}`);
}

describe('health', () => {
  it('GET /health/live and its alias /health: 200, the process named, no credentials, not cached', async () => {
    for (const path of ['/health/live', '/health']) {
      const res = await get(env.apiUrl, path);
      assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.status, 'ok');
      assert.deepEqual(Object.keys(res.body.details), ['process'], `${path} asks no dependency`);
      assert.equal(res.body.info.process.status, 'up');
      assert.equal(res.body.info.process.pid > 0, true);
      assert.deepEqual(res.body.error, {});
      assert.match(res.cacheControl ?? '', /no-store/);
    }
  });

  it('GET /health/ready on a healthy stack: 200 with database, redis and workers named and up, on both api replicas', async () => {
    // The runner waits for the api only: when this file runs first, the worker may still be booting.
    await workerAnnounced(env.apiUrl);
    for (const base of [env.apiUrl, env.apiUrl2]) {
      const res = await get(base, '/health/ready');
      assert.equal(res.status, 200, `${base}/health/ready: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.status, 'ok');
      assert.deepEqual(Object.keys(res.body.details).sort(), ['database', 'redis', 'workers']);
      for (const check of ['database', 'redis', 'workers']) assert.equal(res.body.info[check]?.status, 'up', `${check} is up`);
      assert.deepEqual(res.body.error, {});
      // The test stack runs one worker process; it announces itself and consumes.
      assert.ok(res.body.info.workers.live >= 1, `a live worker: ${JSON.stringify(res.body.info.workers)}`);
      assert.ok(res.body.info.workers.consuming >= 1, `a consuming worker: ${JSON.stringify(res.body.info.workers)}`);
      assert.equal(typeof res.body.info.database.responseTime, 'number');
    }
  });

  it('health routes are public and documented (operations), readiness with its 503', async () => {
    const spec = await http('/openapi.json', { key: null });
    assert.equal(spec.status, 200);
    const paths = spec.body.paths ?? {};
    for (const path of ['/health', '/health/live', '/health/ready']) assert.deepEqual(paths[path]?.get?.tags, ['operations'], path);
    assert.ok(paths['/health/ready'].get.responses['503'], 'not ready is declared');
    assert.deepEqual(paths['/health/ready'].get.security, [], 'no credentials required (an explicit empty requirement)');
    // An unknown path under /health is a 404 in the public error shape, not a health answer.
    const unknown = await http('/health/nope', { key: null });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body?.error?.code, 'route_not_found');
  });
});
