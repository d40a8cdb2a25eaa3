import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import pg from 'pg';
import { shardOf, StreamKeys } from '#libs/events';
import { QUEUES } from '#libs/queue';
import { API } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { type AppChild, loadFromRoot as load, ROOT, type StackModule } from '../support/stack-scripts.js';

// The api and the worker on a Redis Cluster (REDIS_CLUSTER_NODES): this file starts its own three
// redis-server nodes (cluster mode, 127.0.0.1, free ports, no replicas), its own database on the
// suite's Postgres, and one api and one worker against them, then runs the smoke flow over HTTP
// and SSE: create, stream, follow-up, cancel, a question answered (resume), a Last-Event-ID
// reconnect, and many subscribers over a bounded number of reader connections.
//
// Only the pids spawned here are signalled, every wait is bounded, and `after` stops the processes
// and removes the database and the temporary directory.

const LOG_DIR = path.join(ROOT, '.data', 'test-logs');
const SHARDS = 4;
const SLOW = 'one two three four five six seven eight nine ten [[delay:80]]';
const execFileAsync = promisify(execFile);

interface InfraModule {
  freePort(): Promise<number>;
  findOnPath(name: string): string | null;
}


const servers: ChildProcess[] = [];
const apps: AppChild[] = [];
/** A test process killed by the runner must not leave its redis-servers, api or worker behind. */
const killOurs = (): void => {
  for (const child of [...apps, ...servers]) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
};

async function waitUntil<T>(what: string, probe: () => Promise<T | null | false>, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown = null;
  for (let attempt = 0; attempt <= timeoutMs / intervalMs + 10; attempt++) {
    try {
      const value = await probe();
      if (value !== null && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
}

describe('on a Redis Cluster (3 nodes)', () => {
  let tmp: string;
  let ports: number[];
  let apiUrl: string;
  let apiKey: string;
  let cluster: Cluster;
  let admin: pg.Client;
  let database: string;
  let stack: StackModule;
  /** Every session subscribed to on the api so far: its reader groups are their shards. */
  const subscribed = new Set<string>();

  async function call(route: string, body?: unknown): Promise<{ status: number; body: any }> {
    const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['idempotency-key'] = randomUUID();
    }
    const res = await fetch(`${apiUrl}${route}`, { method: body === undefined ? 'GET' : 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }

  async function createSession(input?: string): Promise<string> {
    const res = await call(`${API}/sessions`, input === undefined ? { agent_id: 'default-chatbot' } : { agent_id: 'default-chatbot', input });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id as string;
  }

  async function open(sessionId: string, lastEventId?: string): Promise<SseStream> {
    const stream = await SseStream.open(sessionId, { key: apiKey, baseUrl: apiUrl, ...(lastEventId === undefined ? {} : { lastEventId }) });
    assert.equal(stream.status, 200, stream.bodyText);
    subscribed.add(sessionId);
    return stream;
  }

  const send = (sessionId: string, event: object) => call(`${API}/sessions/${sessionId}/events`, { events: [event] });
  const followUp = (sessionId: string, input: string) => send(sessionId, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input });

  /** The names of the connections to every node whose name starts with `prefix` (all of them for ''). */
  async function namedClients(prefix: string): Promise<string[]> {
    const lists = await Promise.all(cluster.nodes('master').map((node) => node.client('LIST') as Promise<string>));
    return lists
      .flatMap((list) => list.split('\n').filter((line) => line.trim() !== ''))
      .map((line) => /(?:^| )name=(\S*)/.exec(line)?.[1] ?? '')
      .filter((name) => name.startsWith(prefix));
  }

  before(async () => {
    process.on('exit', killOurs);
    stack = await load<StackModule>('scripts/lib/stack.mjs');
    const infra = await load<InfraModule>('scripts/lib/infra.mjs');
    const redisServer = infra.findOnPath('redis-server');
    const redisCli = infra.findOnPath('redis-cli');
    assert.ok(redisServer && redisCli, 'redis-server and redis-cli are on PATH (Debian package redis-server)');
    tmp = mkdtempSync(path.join(os.tmpdir(), 'yuxi-redis-cluster-'));

    // Three empty nodes in cluster mode, nothing persisted.
    ports = [await infra.freePort(), await infra.freePort(), await infra.freePort()];
    for (const port of ports) {
      const server = spawn(
        redisServer,
        [
          '--port', String(port), '--bind', '127.0.0.1', '--dir', tmp, '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
          '--cluster-node-timeout', '5000', '--save', '', '--appendonly', 'no', '--logfile', path.join(tmp, `redis-${port}.log`),
        ],
        { stdio: 'ignore' },
      );
      servers.push(server);
    }
    for (const port of ports) {
      await waitUntil(`redis-server on ${port}`, async () => (await execFileAsync(redisCli, ['-h', '127.0.0.1', '-p', String(port), 'PING'], { timeout: 2_000 })).stdout.trim() === 'PONG');
    }
    // Slots spread evenly over the three masters, as a production cluster has them.
    await execFileAsync(redisCli, ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
    for (const port of ports) {
      await waitUntil(`cluster_state:ok on ${port}`, async () => (await execFileAsync(redisCli, ['-h', '127.0.0.1', '-p', String(port), 'CLUSTER', 'INFO'], { timeout: 2_000 })).stdout.includes('cluster_state:ok'));
    }
    cluster = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));

    // A database of its own on the suite's Postgres: the suite's worker must not see these sessions.
    database = `yuxi_cluster_${randomBytes(6).toString('hex')}`;
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    const databaseUrl = new URL(process.env.DATABASE_URL ?? '');
    databaseUrl.pathname = `/${database}`;

    apiKey = `yx_test_${randomBytes(24).toString('base64url')}`;
    const apiPort = await infra.freePort();
    apiUrl = `http://127.0.0.1:${apiPort}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: databaseUrl.toString(),
      // The URL's host is one seed more; its credentials (none here) would apply to every node.
      REDIS_URL: `redis://127.0.0.1:${ports[0]}`,
      REDIS_CLUSTER_NODES: ports.map((port) => `127.0.0.1:${port}`).join(','),
      REDIS_CLUSTER_STREAM_SHARDS: String(SHARDS),
      PORT: String(apiPort),
      WORKER_HEALTH_PORT: String(await infra.freePort()),
      BOOTSTRAP_API_KEY: apiKey,
    };
    await execFileAsync(process.execPath, [stack.SCRIPTS.migrate], { cwd: ROOT, env, timeout: 60_000 });
    apps.push(stack.launch('redis-cluster-api', stack.SCRIPTS.api, env, LOG_DIR));
    apps.push(stack.launch('redis-cluster-worker', stack.SCRIPTS.worker, env, LOG_DIR));
    await stack.waitForHealth(`${apiUrl}/health`, apps, 60_000);
    // Ready: Postgres, Redis and a live, consuming worker (its presence keys on the cluster).
    await waitUntil('the api ready with a consuming worker', async () => (await fetch(`${apiUrl}/health/ready`)).status === 200, 30_000, 200);
  });

  after(async () => {
    await Promise.all(apps.map((child) => stack?.stopChild(child, 10_000)));
    cluster?.disconnect();
    for (const server of servers) {
      if (server.exitCode !== null || server.signalCode !== null) continue;
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGTERM');
      const timer = setTimeout(() => server.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (admin) {
      if (database) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined);
      await admin.end().catch(() => undefined);
    }
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    process.removeListener('exit', killOurs);
  });

  it('runs a session end to end: create, stream, follow-up, cancel, a question answered, a reconnect', async () => {
    const sessionId = await createSession('hello cluster');
    const stream = await open(sessionId);
    try {
      const first = await stream.waitForType('agent.session.turn.completed');
      assert.equal(stream.events[0]?.type, 'agent.session.created', 'the replay window starts at the session');
      const answer = stream.events.find((e) => e.type === 'agent.session.turn.item.done' && e.data.item.role === 'assistant');
      assert.equal(answer?.data.item.content[0].text, 'Echo: hello cluster');
      assert.ok(stream.events.some((e) => e.type === 'agent.session.turn.output_text.delta'), 'live deltas reach the subscriber');

      // Follow-up: a second turn, FIFO, on the same stream.
      assert.equal((await followUp(sessionId, 'and again')).status, 202);
      const second = await stream.waitFor((e) => e.type === 'agent.session.turn.completed' && e.data.turn_id !== first.data.turn_id);

      // Cancel a running turn mid-model: the worker hears the signal over cluster pub/sub.
      assert.equal((await followUp(sessionId, SLOW)).status, 202);
      const slow = await stream.waitFor((e) => e.type === 'agent.session.turn.created' && e.data.turn_id !== first.data.turn_id && e.data.turn_id !== second.data.turn_id);
      await stream.waitFor((e) => e.type === 'agent.session.turn.output_text.delta' && e.data.delta === ' two');
      const cancel = await send(sessionId, { type: 'agent.session.input.cancel' });
      assert.equal(cancel.status, 202, JSON.stringify(cancel.body));
      assert.equal(cancel.body.turn_id, slow.data.turn_id);
      const cancelled = await stream.waitForType('agent.session.turn.cancelled', slow.data.turn_id);
      assert.equal(cancelled.data.turn.status, 'cancelled');
      assert.equal((await call(`${API}/sessions/${sessionId}/turns/${slow.data.turn_id}`)).body.status, 'cancelled');

      // A question: the turn waits; answering it resumes the turn in a new run, which completes.
      assert.equal((await followUp(sessionId, 'pick one [[ask:Which colour?]]')).status, 202);
      const waiting = await stream.waitForType('yuxi.session.turn.waiting');
      assert.equal(waiting.data.waitpoint.kind, 'question');
      const resume = await send(sessionId, {
        type: 'yuxi.session.input.resume',
        turn_id: waiting.data.turn_id,
        waitpoint_id: waiting.data.waitpoint.id,
        response: { type: 'answer', answers: [{ question_id: waiting.data.waitpoint.questions[0].question_id, answer: 'blue' }] },
      });
      assert.equal(resume.status, 202, JSON.stringify(resume.body));
      const resumed = await stream.waitForType('agent.session.turn.completed', waiting.data.turn_id);
      assert.equal(resumed.data.turn.status, 'completed');
      const runs = (await call(`${API}/sessions/${sessionId}/turns/${waiting.data.turn_id}`)).body.yuxi.runs;
      assert.equal(runs.length, 2, 'the answer continued the turn in a second run');

      // A reconnect with Last-Event-ID gets exactly what followed that event, from the catch-up read.
      const at = stream.events.findIndex((e) => e.type === 'agent.session.turn.cancelled');
      const again = await open(sessionId, stream.events[at]?.id);
      try {
        const last = stream.events.length - 1;
        await again.waitFor((e) => e.id === stream.events[last]?.id);
        const upTo = again.events.findIndex((e) => e.id === stream.events[last]?.id);
        assert.deepEqual(
          again.events.slice(0, upTo + 1).map((e) => e.id),
          stream.events.slice(at + 1, last + 1).map((e) => e.id),
        );
      } finally {
        again.close();
      }
    } finally {
      stream.close();
    }

    // The keys are where the design puts them: the session's under its shard's hash tag, BullMQ's
    // under a prefix tagged with the queue's name.
    const keys = new StreamKeys(SHARDS);
    assert.match(keys.stream(sessionId), new RegExp(`^yuxi:session-events:\\{es${shardOf(sessionId, SHARDS)}\\.\\d+\\}:${sessionId}$`));
    assert.equal(await cluster.exists(keys.stream(sessionId)), 1);
    assert.equal(await cluster.exists(`bull:{${QUEUES.sessions}}:${QUEUES.sessions}:meta`), 1);
    assert.equal(await cluster.exists(`bull:${QUEUES.sessions}:meta`), 0, 'no untagged BullMQ keys');
  });

  it('serves many subscribers over a constant number of Redis connections, one reader per shard', async () => {
    const streams: { sessionId: string; stream: SseStream }[] = [];
    /** Subscribes to `count` new sessions, runs a turn on each and checks every subscriber got its own answer. */
    const subscribeAndRun = async (count: number, until: () => boolean = () => false): Promise<void> => {
      const batch: typeof streams = [];
      for (let i = 0; i < count && !until(); i++) {
        const sessionId = await createSession();
        batch.push({ sessionId, stream: await open(sessionId) });
      }
      streams.push(...batch);
      for (const { sessionId } of batch) assert.equal((await followUp(sessionId, `hello ${sessionId}`)).status, 202);
      for (const { sessionId, stream } of batch) {
        const done = await stream.waitFor((e) => e.type === 'agent.session.turn.item.done' && e.data.item.role === 'assistant');
        assert.equal(done.data.item.content[0].text, `Echo: hello ${sessionId}`);
      }
    };
    const shardsSubscribed = () => new Set([...subscribed].map((id) => shardOf(id, SHARDS))).size;
    try {
      // Subscribers on sessions of every shard (bounded: the shards of 40 random ids cover all 4),
      // and at least 24 sessions: a cluster client connects to a node the first time one of its
      // commands routes there, and per-session keys (signals, locks, idempotency) land on random
      // slots. After 24 sessions each client has met each of the 3 nodes (a miss is (2/3)^24 per
      // client and node), so what the next phase adds is what subscribers cost, not a first visit.
      await subscribeAndRun(24);
      await subscribeAndRun(40, () => shardsSubscribed() === SHARDS);
      assert.equal(shardsSubscribed(), SHARDS, 'the sessions cover every shard');
      const readers = await namedClients('yuxi-events-reader');
      const clients = await namedClients('');
      const total = clients.length;
      // A reader is a cluster client: its shard's node, and the node it first learned the slots from.
      assert.deepEqual(new Set(readers), new Set(Array.from({ length: SHARDS }, (_, shard) => `yuxi-events-reader-${shard}`)));
      assert.ok(readers.length <= 2 * SHARDS, `reader connections: ${readers.join(', ')}`);

      // Twelve more subscribers, each joining a reader already blocked in XREAD (the wake-up makes
      // it include the new session): every one is served, and no connection is added anywhere.
      const before = streams.length;
      await subscribeAndRun(12);
      // (The first phase may have needed fewer sessions than shards: the smoke flow's are subscribed too.)
      assert.equal(streams.length, before + 12);
      assert.deepEqual((await namedClients('yuxi-events-reader')).sort(), readers.sort(), `the same readers for ${subscribed.size} subscribed sessions`);
      const clientsAfter = await namedClients('');
      const added = [...clientsAfter];
      for (const name of clients) added.splice(added.indexOf(name), added.includes(name) ? 1 : 0);
      assert.equal(clientsAfter.length, total, `Redis connections of api, worker and test alike stay as they were (added: ${added.join(', ') || 'none'})`);
    } finally {
      for (const { stream } of streams) stream.close();
    }
  });
});
