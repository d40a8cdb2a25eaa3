// Operations: what an orchestrator relies on.
//   a. SIGTERM of an api holding 50 open SSE streams and a request in flight: it stops accepting
//      connections, every client gets `retry:` and a cleanly ended stream, the request in flight
//      completes, and the process exits on its own with code 0 (a clean close: the shutdown's own
//      deadline, inside the orchestrator's grace period, exits 1) while the clients still hold their
//      connections.
//   b. The api's /health/ready names the failing check — database (Postgres stopped), redis (Redis
//      killed), workers (every worker gone; one that stops cleanly withdraws at once) — with 503,
//      and answers 200 again after each comes back.
//   c. The worker's /health/ready: its consumers' Redis connections broken while Redis is up
//      (the consumers, not redis, are down), Redis down, Postgres down — 503 naming the check, and
//      200 again after each.
import assert from 'node:assert/strict';
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { API, newKey } from './client.js';
import { Cluster, echoOf, type FaultInfra, type Proc, startFaultInfra, waitQuiescent, waitUntil, within } from './harness.js';
import { assertTurnsInOrder } from './steps.js';

const STREAMS = 50;
const SESSIONS = 5;
/**
 * How long the test waits for the api to exit: past its own shutdown deadline (SHUTDOWN_TIMEOUT_MS,
 * 25 s, after which it exits 1), so that exit code 0 is what says the close finished cleanly.
 */
const EXIT_WAIT_MS = 40_000;
/** What the api tells SSE clients on shutdown (SHUTDOWN_RETRY_MS). */
const RETRY_FIELD = /(^|\n)retry: 1000\n/;

interface Health {
  status: number;
  body: any;
}

async function getHealth(url: string, timeoutMs = 5_000): Promise<Health> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  return { status: res.status, body: await res.json() };
}

/** Polls `url` (every 200 ms, at most `timeoutMs`) until `accept` holds; returns that answer. */
function healthUntil(what: string, url: string, accept: (h: Health) => boolean, timeoutMs = 30_000): Promise<Health> {
  return waitUntil(
    what,
    async () => {
      const h = await getHealth(url);
      return accept(h) ? h : null;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

const isReady = (h: Health) => h.status === 200 && h.body.status === 'ok';
/** 503, overall `error`, and exactly `failing` among the failed checks. */
const failsWith =
  (...failing: string[]) =>
  (h: Health) =>
    h.status === 503 && h.body.status === 'error' && Object.keys(h.body.error).sort().join() === [...failing].sort().join();

// ------------------------------------------------------------------ raw SSE clients

interface StreamClient {
  text: () => string;
  /** How the response body ended: 'end' (complete) or 'cut' (the connection dropped mid-body). */
  ended: Promise<'end' | 'cut'>;
  req: ClientRequest;
}

/** An SSE request on its own connection; resolves once the server said `: connected`. */
function openStream(proc: Proc, key: string, sessionId: string, opened: ClientRequest[]): Promise<StreamClient> {
  const req = request(`${proc.url}${API}/sessions/${sessionId}/events`, { agent: false, headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' } });
  opened.push(req);
  const connected = new Promise<StreamClient>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`stream of ${sessionId}: ${res.statusCode}`));
        return;
      }
      let text = '';
      let resolved = false;
      res.setEncoding('utf8');
      const ended = new Promise<'end' | 'cut'>((done) => {
        res.once('end', () => done('end'));
        res.once('close', () => done(res.complete ? 'end' : 'cut'));
        res.on('error', () => done('cut'));
      });
      res.on('data', (chunk: string) => {
        text += chunk;
        if (!resolved && text.includes(': connected')) {
          resolved = true;
          resolve({ text: () => text, ended, req });
        }
      });
    });
  });
  req.end();
  return within(`SSE stream of ${sessionId} connected`, connected, 15_000);
}

/** A POST whose headers the server has taken (100 Continue) and whose body is half sent. */
async function postInFlight(proc: Proc, key: string, sessionId: string, text: string, opened: ClientRequest[]) {
  const body = JSON.stringify({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text }] });
  const req = request(`${proc.url}${API}/sessions/${sessionId}/events`, {
    method: 'POST',
    agent: false,
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'idempotency-key': newKey('in-flight'),
      expect: '100-continue',
    },
  });
  opened.push(req);
  const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      let answer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (answer += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: answer }));
    });
  });
  response.catch(() => undefined);
  const continued = new Promise<void>((resolve) => req.once('continue', resolve));
  req.flushHeaders();
  // 100 Continue: the server parsed the headers and handed the request on; it is in flight.
  await within('100 Continue', continued, 10_000);
  const half = Math.floor(body.length / 2);
  req.write(body.slice(0, half));
  return { finish: () => req.end(body.slice(half)), response };
}

/** Resolves with the error code of a TCP connect to `port` (null: it was accepted). */
function connectOutcome(port: number): Promise<string | null> {
  return within(
    `TCP connect to :${port}`,
    new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(null);
      });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
    }),
    5_000,
  );
}

// ------------------------------------------------------------------ scenarios

describe('faults: operations', () => {
  let infra: FaultInfra;
  before(async () => {
    infra = await startFaultInfra('operations');
  });
  after(async () => {
    // A failed scenario may leave a server down; bring them back for a clean stop.
    await infra?.redis.start().catch(() => undefined);
    await infra?.postgres.start().catch(() => undefined);
    await infra?.stop();
  });

  it('a. api SIGTERM with 50 open SSE streams and a request in flight: refuses new connections, every client gets retry: and a clean end, the request completes, exits 0 on its own with the clients still connected', { timeout: 120_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'a-api-sigterm-streams', { apis: 1, workers: 1, env: { MAX_STREAMS_PER_PRINCIPAL: String(STREAMS + 10), MAX_STREAMS_PER_ACCOUNT: String(STREAMS + 10) } });
    const opened: ClientRequest[] = [];
    try {
      const api = cluster.apis[0]!;
      const client = cluster.api();
      const sessions: string[] = [];
      for (let i = 0; i < SESSIONS; i++) sessions.push((await client.createSession()).id);
      const streams: StreamClient[] = [];
      for (let i = 0; i < STREAMS; i++) streams.push(await openStream(api, infra.apiKey, sessions[i % SESSIONS]!, opened));
      const text = 'sent across the shutdown';
      const inFlight = await postInFlight(api, infra.apiKey, sessions[0]!, text, opened);

      const t0 = Date.now();
      cluster.signal(api, 'SIGTERM');
      const exited = cluster.waitExit(api, EXIT_WAIT_MS);

      const endings = await within('every stream to end', Promise.all(streams.map((s) => s.ended)), 20_000);
      t.diagnostic(`all ${STREAMS} streams ended ${Date.now() - t0} ms after SIGTERM`);
      assert.deepEqual(
        endings.map((how, i) => `${i}:${how}`).filter((e) => !e.endsWith(':end')),
        [],
        'every stream ended cleanly (a complete body, not a cut connection)',
      );
      const untold = streams.flatMap((s, i) => (RETRY_FIELD.test(s.text()) ? [] : [i]));
      assert.deepEqual(untold, [], 'every client received `retry: 1000` before its stream ended');

      // It stopped listening before it ended the streams.
      assert.equal(await connectOutcome(api.port), 'ECONNREFUSED', 'a new connection is refused');

      // The request in flight at SIGTERM is served to the end.
      inFlight.finish();
      const answer = await within('the in-flight request answer', inFlight.response, 15_000);
      assert.equal(answer.status, 202, `the request in flight at SIGTERM completes: ${answer.text}`);

      // The clients never close their connections (they are destroyed in `finally`): the api exits
      // without waiting for them. Code 0 is a close that finished; the shutdown deadline exits 1.
      const exit = await exited;
      assert.ok(exit, `the api exited after SIGTERM (waited ${EXIT_WAIT_MS} ms)\n${cluster.logTail(api)}`);
      t.diagnostic(`api exited ${Date.now() - t0} ms after SIGTERM (code ${exit.code}, signal ${exit.signal})`);
      assert.equal(exit.code, 0, `exit code 0: the close finished before the shutdown deadline\n${cluster.logTail(api)}`);
      assert.equal(exit.signal, null);
      assert.match(cluster.logTail(api, 60), new RegExp(`ended ${STREAMS} event stream\\(s\\)`), 'the api logged the streams it ended');

      // The accepted input is durable and runs once, on the worker, with no api left.
      await waitQuiescent(infra, [sessions[0]!], 30_000);
      await assertTurnsInOrder(infra, sessions[0]!, [echoOf(text)]);
    } finally {
      for (const req of opened) req.destroy();
      await cluster.stop();
    }
  });

  it('b. api /health/ready: 503 naming database, redis or workers while each is down, 200 after each comes back; a worker that stops withdraws at once', { timeout: 180_000 }, async (t) => {
    // Heartbeats every second: an announcement expires 3 s after a worker's last beat.
    const cluster = await Cluster.start(infra, 'b-api-readiness', { apis: 1, workers: 2, env: { WORKER_HEARTBEAT_MS: '1000' } });
    try {
      const api = cluster.apis[0]!;
      const ready = `${api.url}/health/ready`;
      const live = `${api.url}/health/live`;
      const both = await healthUntil('both workers announced', ready, (h) => isReady(h) && h.body.info.workers.consuming === 2);
      assert.deepEqual(Object.keys(both.body.details).sort(), ['database', 'redis', 'workers']);

      // Postgres stopped.
      await infra.postgres.halt('SIGINT');
      try {
        const down = await healthUntil('readiness failing on the database', ready, failsWith('database'));
        t.diagnostic(`Postgres down: ${JSON.stringify(down.body.error)}`);
        assert.equal(down.body.details.database.status, 'down');
        assert.equal(down.body.info.redis.status, 'up');
        assert.equal(down.body.info.workers.status, 'up');
        assert.equal((await getHealth(live)).status, 200, 'liveness asks no dependency');
      } finally {
        await infra.postgres.start();
      }
      await healthUntil('readiness back after Postgres', ready, isReady);

      // Redis killed: the workers' presence is unreadable too.
      await infra.redis.kill('SIGKILL');
      try {
        const down = await healthUntil('readiness failing on redis', ready, failsWith('redis', 'workers'));
        t.diagnostic(`Redis down: ${JSON.stringify(down.body.error)}`);
        assert.equal(down.body.info.database.status, 'up');
        assert.equal((await getHealth(live)).status, 200, 'liveness asks no dependency');
      } finally {
        await infra.redis.start();
      }
      await healthUntil('readiness back after Redis (the workers announce themselves again)', ready, (h) => isReady(h) && h.body.info.workers.consuming === 2);

      // A worker told to stop withdraws its announcement before it exits.
      const [first, second] = cluster.workers as [Proc, Proc];
      cluster.signal(first, 'SIGTERM');
      const stopped = await cluster.waitExit(first, EXIT_WAIT_MS);
      assert.equal(stopped?.code, 0, 'the worker stopped cleanly');
      const afterStop = await getHealth(ready);
      assert.equal(afterStop.status, 200, JSON.stringify(afterStop.body));
      assert.equal(afterStop.body.info.workers.live, 1, `only the running worker is counted: ${JSON.stringify(afterStop.body.info.workers)}`);

      // Every worker gone: the last one killed, its announcement expires.
      cluster.signal(second, 'SIGKILL');
      assert.ok(await cluster.waitExit(second, 5_000), 'the killed worker is gone');
      const noWorker = await healthUntil('readiness failing on workers', ready, failsWith('workers'), 20_000);
      t.diagnostic(`no worker: ${JSON.stringify(noWorker.body.error)}`);
      assert.equal(noWorker.body.error.workers.live, 0);
      assert.equal(noWorker.body.info.database.status, 'up');
      assert.equal(noWorker.body.info.redis.status, 'up');

      await cluster.addWorker();
      const back = await healthUntil('readiness back with a new worker', ready, isReady);
      assert.equal(back.body.info.workers.consuming, 1);
    } finally {
      await cluster.stop();
    }
  });

  it("c. worker /health/ready: 503 naming consumers when its BullMQ connections are broken, redis and consumers when Redis is down, database when Postgres is down; 200 after each", { timeout: 180_000 }, async (t) => {
    const cluster = await Cluster.start(infra, 'c-worker-readiness', { apis: 0, workers: 1, env: { WORKER_HEARTBEAT_MS: '1000' } });
    const admin = new Redis(infra.redisUrl, { connectionName: 'fault-test-admin', maxRetriesPerRequest: 1, lazyConnect: true });
    admin.on('error', () => undefined);
    let password: string | null = null;
    try {
      const worker = cluster.workers[0]!;
      const ready = `${worker.url}/health/ready`;
      const live = `${worker.url}/health/live`;

      const alias = await getHealth(`${worker.url}/health`);
      const liveness = await getHealth(live);
      for (const h of [alias, liveness]) {
        assert.equal(h.status, 200);
        assert.equal(h.body.status, 'ok');
        assert.deepEqual(Object.keys(h.body.details), ['process']);
        assert.equal(typeof h.body.worker_id, 'string');
        assert.equal(h.body.fenced_writes, 0);
      }
      assert.equal(alias.body.worker_id, liveness.body.worker_id, '/health is the liveness alias');
      assert.equal((await fetch(`${worker.url}/nope`)).status, 404);

      const healthy = await healthUntil('the worker ready', ready, isReady);
      assert.deepEqual(Object.keys(healthy.body.details).sort(), ['consumers', 'database', 'redis']);
      assert.deepEqual(healthy.body.info.consumers, { status: 'up', 'session-dispatch': 'running', maintenance: 'running', files: 'running', webhooks: 'running', automations: 'running' });

      // Its BullMQ connections broken while Redis is up: they cannot come back (a password is now
      // required), the worker's other (named) connections stay up. Only BullMQ's are unnamed.
      await admin.connect();
      password = newKey('pw');
      await admin.config('SET', 'requirepass', password);
      const clients = String(await admin.client('LIST'))
        .split('\n')
        .filter((line) => /(^| )name=( |$)/.test(line))
        .map((line) => /(^| )id=(\d+)/.exec(line)?.[2])
        .filter((id): id is string => id !== undefined);
      assert.ok(clients.length >= 4, `the worker's BullMQ connections (2 per consumer): ${clients.length}`);
      for (const id of clients) await admin.client('KILL', 'ID', id);
      try {
        // The worker notices each closed socket on its own time: both consumers, then.
        const down = await healthUntil(
          'worker readiness failing on both consumers',
          ready,
          (h) => failsWith('consumers')(h) && h.body.error.consumers['session-dispatch'] === 'disconnected' && h.body.error.consumers.maintenance === 'disconnected',
        );
        t.diagnostic(`BullMQ connections broken: ${JSON.stringify(down.body.error)}`);
        assert.equal(down.body.info.redis.status, 'up', 'Redis itself answers');
        assert.equal(down.body.info.database.status, 'up');
        // Its announcement says it does not consume: the api does not count it.
        const announced = await waitUntil(
          'the worker announcing consuming: false',
          async () => {
            const value = await admin.get(`yuxi:workers:${liveness.body.worker_id}`);
            return value && JSON.parse(value).consuming === false ? value : null;
          },
          { timeoutMs: 10_000, intervalMs: 200 },
        );
        assert.ok(announced);
        assert.equal((await getHealth(live)).status, 200, 'liveness stays 200');
      } finally {
        await admin.config('SET', 'requirepass', '');
        password = null;
      }
      const back = await healthUntil('worker readiness back after its connections recover', ready, isReady, 45_000);
      assert.equal(back.body.info.consumers['session-dispatch'], 'running');

      // Redis down.
      admin.disconnect();
      await infra.redis.kill('SIGKILL');
      try {
        const down = await healthUntil('worker readiness failing on redis and consumers', ready, failsWith('redis', 'consumers'));
        t.diagnostic(`Redis down: ${JSON.stringify(down.body.error)}`);
        assert.equal(down.body.info.database.status, 'up');
        assert.equal((await getHealth(live)).status, 200, 'liveness stays 200');
      } finally {
        await infra.redis.start();
      }
      await healthUntil('worker readiness back after Redis', ready, isReady, 45_000);

      // Postgres stopped.
      await infra.postgres.halt('SIGINT');
      try {
        const down = await healthUntil('worker readiness failing on the database', ready, failsWith('database'));
        t.diagnostic(`Postgres down: ${JSON.stringify(down.body.error)}`);
        assert.equal(down.body.info.consumers.status, 'up');
      } finally {
        await infra.postgres.start();
      }
      await healthUntil('worker readiness back after Postgres', ready, isReady);
    } finally {
      if (password !== null) await admin.config('SET', 'requirepass', '').catch(() => undefined);
      admin.disconnect();
      await cluster.stop();
    }
  });
});
