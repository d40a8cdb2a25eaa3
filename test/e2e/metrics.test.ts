import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { instrumentRedis, Metrics } from '#libs/metrics';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, createSession, http, postEvent, sendMessage } from '../support/http.js';
import { call, createSessionAs, newProductUser } from '../support/identity.js';
import { startMcpServer } from '../support/mcp-server.js';
import { documentedMetrics, parseExposition, type Scrape, scrape, total } from '../support/metrics.js';
import { RawSseClient, turnsUntilCut } from '../support/slow-reader.js';
import { SseStream } from '../support/sse.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

type Process = 'api' | 'worker';
const scrapeOf = (process: Process): Promise<Scrape> => scrape(process === 'api' ? env.apiUrl : env.workerHealthUrl);

/** Reads until `done` holds (bounded: `tries` reads, `intervalMs` apart); fails with `what` otherwise. */
async function eventually<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, tries = 80, intervalMs = 250): Promise<T> {
  let value = await read();
  for (let i = 1; i < tries && !done(value); i += 1) {
    await sleep(intervalMs);
    value = await read();
  }
  assert.ok(done(value), `${what} (not within ${tries} reads)`);
  return value;
}

const queued = (s: Scrape): number => total(s, 'yuxi_queue_jobs', { queue: 'session-dispatch', state: 'waiting' });

// The metrics of both apps, scraped before and after real work through the api: turns that
// complete (with a builtin tool call), fail and are cancelled while waiting; a model on the wire; webhook deliveries to a local receiver (held back, then
// delivered; an endpoint disabled by a 410); a paused queue; Redis refusing writes; Postgres ending
// connections. Every metric of docs/metrics.md must be present and have moved, but those only a
// dead or stalled worker moves: they are asserted where a worker is killed (IN_FAULT_SUITE).
describe('metrics', () => {
  let fake: FakeOpenAi;
  const baseline = {} as Record<Process, Scrape>;
  /** Gauges: their value just before a condition, and while it held. */
  const observed: Record<Process, Map<string, { from: number; to: number }>> = { api: new Map(), worker: new Map() };

  before(async () => {
    fake = await startFakeOpenAi(env.fakeOpenAiPort);
    await eventually('the worker health port answers', () => fetch(`${env.workerHealthUrl}/health`).then((r) => r.status, () => 0), (status) => status === 200);
    baseline.api = await scrapeOf('api');
    baseline.worker = await scrapeOf('worker');
  });
  after(async () => {
    await fake.close();
  });

  it('serves the Prometheus text format on the api (no credentials, like /health) and on the worker health port', async () => {
    for (const url of [env.apiUrl, env.workerHealthUrl]) {
      const res = await fetch(`${url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      assert.match(text, /^# TYPE yuxi_process_cpu_seconds_total counter$/m, 'default process metrics, prefixed');
    }
    assert.equal(baseline.api.samples.find((s) => s.name === 'yuxi_http_requests_total' || s.name === 'yuxi_sse_connections')?.labels.app, 'api');
    assert.ok(baseline.worker.samples.every((s) => s.labels.app === 'worker'));
    assert.ok(!baseline.worker.types.has('yuxi_http_requests_total'), 'api metrics are not on the worker');
    assert.ok(!baseline.api.types.has('yuxi_model_calls_total'), 'worker metrics are not on the api');
  });

  it('a turn with a builtin tool call, then a failed turn, watched over SSE', async () => {
    const session = await createSession('[[tool:calculator {"expression":"1+1"}]]');
    const base = total(await scrapeOf('api'), 'yuxi_sse_connections');
    const stream = await SseStream.open(session.id);
    let open: number;
    try {
      const seen = await eventually('the open stream is counted', () => scrapeOf('api'), (s) => total(s, 'yuxi_sse_connections') > base);
      open = total(seen, 'yuxi_sse_connections');
      observed.api.set('yuxi_sse_connections', { from: base, to: open });
      const completed = await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
      const turn = (await http(`${API}/sessions/${session.id}/turns/${completed.data.turn_id}`)).body;
      assert.equal(turn.yuxi.output[0].content[0].text, 'Tool calculator returned: 2');
      await sendMessage(session.id, '[[fail:model_bad_request]]');
      const failed = await stream.waitForType('agent.session.turn.failed', undefined, 20_000);
      assert.equal(failed.data.turn.error.code, 'model_bad_request');
    } finally {
      stream.close();
    }
    await eventually('the closed stream is no longer counted', () => scrapeOf('api'), (s) => total(s, 'yuxi_sse_connections') < open);
  });

  it('a turn of a model on the wire reports its tokens, cached ones included', async () => {
    const { id, model } = await putAgent({ instructions: 'Be brief.' });
    assert.equal((await http(`/api/v1/admin/model-prices/${model}`, { method: 'PUT', body: { input_per_mtok_usd: 1, output_per_mtok_usd: 1 } })).status, 201, 'priced: 14 tokens, 14 µUSD');
    fake.script(fakeModel(model), [{ text: ['Hello', ' metrics'], usage: { prompt_tokens: 12, completion_tokens: 2, cached: 4 } }]);
    const session = await createSessionWith(id, 'hi');
    const stream = await SseStream.open(session.id);
    try {
      const done = await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
      // The exact numbers are checked on the turn: the worker's counters are process-wide, and a
      // model call left over from an earlier file (a retry, a takeover) would move them too.
      assert.deepEqual(done.data.turn.yuxi.usage, { input_tokens: 12, output_tokens: 2, cached_tokens: 4, reasoning_tokens: 0, total_tokens: 14, model_calls: 1, tool_calls: 0, cost_microusd: 14 });
      assert.equal(fake.requests(fakeModel(model)).length, 1, 'one model call');
    } finally {
      stream.close();
    }
  });

  it('an MCP tool call opens a session the worker keeps for the next call', async () => {
    const mcp = await startMcpServer();
    try {
      const { id, model } = await putAgent({ tools: [{ type: 'mcp', server_label: 'metrics', server_url: mcp.url, allowed_tools: ['add'] }] });
      fake.script(fakeModel(model), [{ tool_calls: [{ id: 'm1', name: 'add', arguments: '{"a":1,"b":2}' }] }, { text: 'three' }]);
      const before = total(await scrapeOf('worker'), 'yuxi_mcp_sessions_open');
      const session = await createSessionWith(id, 'add');
      const stream = await SseStream.open(session.id);
      try {
        await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
      } finally {
        stream.close();
      }
      // A new server: the worker opened a session for it and holds it, idle, for the next call.
      const seen = await eventually('the held session is counted', () => scrapeOf('worker'), (s) => total(s, 'yuxi_mcp_sessions_open') > before);
      observed.worker.set('yuxi_mcp_sessions_open', { from: before, to: total(seen, 'yuxi_mcp_sessions_open') });
      assert.equal(mcp.calls.filter((c) => c.tool === 'add').length, 1);
    } finally {
      await mcp.close();
    }
  });

  it('webhook deliveries: held back by a Retry-After (the backlog), then delivered; an endpoint that answers 410 is disabled', async () => {
    // A product user of its own: only its sessions are fanned out to its endpoints. The suite's
    // stack allows private targets, so the receiver is a local server on 127.0.0.1.
    const receiver = await WebhookReceiver.start();
    const { caller } = await newProductUser('metrics webhooks');
    const endpoints: string[] = [];
    const endpoint = async (path: string): Promise<void> => {
      const res = await call(caller, `${API}/webhooks`, { body: { url: `${receiver.url}${path}` } });
      assert.equal(res.status, 201, res.text);
      endpoints.push(res.body.id);
    };
    let hold = true;
    receiver.answer = (hook) => (hook.path === '/gone' ? { status: 410 } : hold ? { status: 503, headers: { 'retry-after': '5' } } : { status: 200, body: '{"ok":true}' });
    try {
      await endpoint('/delivered');
      await endpoint('/gone');
      const before = await scrapeOf('worker');
      const base = total(before, 'yuxi_webhook_backlog');
      const session = await createSessionAs(caller, 'webhook metrics');
      // The first attempt is answered 503 with Retry-After: 5, so the delivery waits, pending, and
      // the webhook sweep (every second on the suite's stack) counts it.
      const seen = await eventually('the webhook sweep counts the pending delivery', () => scrapeOf('worker'), (s) => total(s, 'yuxi_webhook_backlog') > base);
      observed.worker.set('yuxi_webhook_backlog', { from: base, to: total(seen, 'yuxi_webhook_backlog') });
      hold = false;
      await receiver.waitFor(
        'the completed turn delivered',
        () => receiver.at('/delivered').some((hook) => hook.json?.type === 'agent.session.turn.completed' && hook.json.data.session_id === session.id),
        30_000,
      );
      const now = await eventually(
        'the worker counts the attempts and the disabled endpoint',
        () => scrapeOf('worker'),
        (s) =>
          total(s, 'yuxi_webhook_attempts_total', { outcome: 'succeeded' }) >= total(before, 'yuxi_webhook_attempts_total', { outcome: 'succeeded' }) + 2 &&
          // A delivery is counted after its attempt: wait for both counters, not the first alone.
          total(s, 'yuxi_webhook_deliveries_total', { outcome: 'succeeded' }) >= total(before, 'yuxi_webhook_deliveries_total', { outcome: 'succeeded' }) + 2 &&
          total(s, 'yuxi_webhook_endpoints_disabled_total', { reason: 'gone' }) > total(before, 'yuxi_webhook_endpoints_disabled_total', { reason: 'gone' }),
      );
      const grew = (name: string, where: Record<string, string> = {}): number => total(now, name, where) - total(before, name, where);
      assert.ok(grew('yuxi_webhook_attempts_total', { outcome: 'failed' }) >= 2, 'the 503 and the 410');
      assert.ok(grew('yuxi_webhook_attempt_duration_seconds_count') >= 4, 'every attempt is timed');
      assert.ok(grew('yuxi_webhook_deliveries_total', { outcome: 'succeeded' }) >= 2, 'the created session and the completed turn');
      assert.equal(now.types.get('yuxi_webhook_backlog'), 'gauge', 'the backlog is exposed');
      const gone = await call(caller, `${API}/webhooks/${endpoints[1]}`);
      assert.equal(gone.body.disabled_reason, 'gone', gone.text);
    } finally {
      for (const id of endpoints) await call(caller, `${API}/webhooks/${id}`, { method: 'DELETE' });
      await receiver.close();
    }
  });

  it('a turn cancelled while it waits at a waitpoint ends in the api', async () => {
    const session = await createSession('[[ask:Proceed?]]');
    const stream = await SseStream.open(session.id);
    try {
      const waiting = await stream.waitForType('yuxi.session.turn.waiting', undefined, 20_000);
      const cancel = await postEvent(session.id, { type: 'agent.session.input.cancel' });
      assert.equal(cancel.status, 202, cancel.text);
      await stream.waitForType('agent.session.turn.cancelled', waiting.data.turn_id);
    } finally {
      stream.close();
    }
  });

  it('labels requests by route pattern, refusals before routing included, never by raw path', async () => {
    const id = randomUUID();
    assert.equal((await http(`${API}/sessions/${id}`, { key: null })).status, 401);
    assert.equal((await http(`/api/v1/nothing-here/${id}`)).status, 404);
    const series = (await scrapeOf('api')).samples.filter((s) => s.name === 'yuxi_http_requests_total');
    assert.ok(
      series.some((s) => /^\/api\/v1\/agents\/sessions\/:\w+$/.test(s.labels.route!) && s.labels.method === 'GET' && s.labels.status === '401'),
      'the 401 of the authentication middleware carries the pattern its path matches',
    );
    assert.ok(series.some((s) => s.labels.route === 'unmatched' && s.labels.status === '404'));
    assert.ok(series.some((s) => /^\/api\/v1\/agents\/sessions\/:\w+\/events$/.test(s.labels.route!) && s.labels.method === 'POST' && s.labels.status === '202'));
    assert.ok(series.some((s) => s.labels.route === '/metrics' && s.labels.status === '200'));
    for (const s of series) assert.doesNotMatch(s.labels.route!, /[0-9a-f]{8}-[0-9a-f]{4}-/i, `no raw id in ${s.labels.route}`);
  });

  it('queue depth shows a job waiting in a paused queue', async () => {
    const queue = new Queue('session-dispatch', { connection: { url: env.redisUrl } });
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    try {
      await queue.pause();
      // Paused: nothing leaves the queue, so the count can only grow from here.
      const base = queued(await scrapeOf('worker'));
      await sendMessage(session.id, 'behind a paused queue');
      const seen = await eventually('the worker shows the queued nudge', () => scrapeOf('worker'), (s) => queued(s) > base);
      observed.worker.set('yuxi_queue_jobs', { from: base, to: queued(seen) });
      await queue.resume();
      await stream.waitForType('agent.session.turn.completed', undefined, 20_000);
    } finally {
      await queue.resume();
      await queue.close();
      stream.close();
    }
  });

  it('Redis refusing writes: Redis errors on both apps, and the relay lag grows until it is back', async () => {
    const session = await createSession();
    const stream = await SseStream.open(session.id);
    const apiBase = await scrapeOf('api');
    const base = { api: total(apiBase, 'yuxi_redis_errors_total'), worker: total(await scrapeOf('worker'), 'yuxi_redis_errors_total') };
    const admin = new Redis(env.redisUrl);
    let lag = 0;
    try {
      // Writes (and scripts) block; reads go on. Bounded by Redis itself, should this test die here.
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      // Rate limiting times out and lets the request through; publishing its events times out: the relay must do it.
      const accepted = await sendMessage(session.id, 'while Redis refuses writes');
      assert.equal(accepted.status, 202, accepted.text);
      const seen = await eventually(
        'the api counts Redis errors and the relay lag grows',
        () => scrapeOf('api'),
        (s) => total(s, 'yuxi_redis_errors_total') > base.api && total(s, 'yuxi_event_relay_lag_seconds') >= 3,
      );
      lag = total(seen, 'yuxi_event_relay_lag_seconds');
      observed.api.set('yuxi_event_relay_lag_seconds', { from: total(apiBase, 'yuxi_event_relay_lag_seconds'), to: lag });
      assert.ok(total(seen, 'yuxi_redis_errors_total', { component: 'auth' }) > total(apiBase, 'yuxi_redis_errors_total', { component: 'auth' }), 'rate limiting timed out');
      await eventually('the worker counts Redis errors (its relay cannot publish)', () => scrapeOf('worker'), (s) => total(s, 'yuxi_redis_errors_total') > base.worker);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
    // A stream held through a long write pause may be ended by the server (its client reconnects);
    // a new connection replays the session from its start, so the turn's end is seen either way.
    stream.close();
    const replay = await SseStream.open(session.id);
    try {
      await replay.waitForType('agent.session.turn.completed', undefined, 30_000);
    } finally {
      replay.close();
    }
    await eventually('the relay catches up', () => scrapeOf('api'), (s) => total(s, 'yuxi_event_relay_lag_seconds') < lag);
  });

  it('Postgres ending idle connections: Postgres errors on both apps', async () => {
    const base = { api: total(await scrapeOf('api'), 'yuxi_postgres_errors_total'), worker: total(await scrapeOf('worker'), 'yuxi_postgres_errors_total') };
    const admin = new pg.Client({ connectionString: env.databaseUrl });
    await admin.connect();
    try {
      await eventually(
        'both count the connections the server ended',
        async () => {
          await scrapeOf('api'); // the scrape reads Postgres: the api pool holds an idle connection now
          await admin.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle' AND backend_type = 'client backend'`,
          );
          return [total(await scrapeOf('api'), 'yuxi_postgres_errors_total'), total(await scrapeOf('worker'), 'yuxi_postgres_errors_total')];
        },
        ([api, worker]) => api! > base.api && worker! > base.worker,
        40,
      );
    } finally {
      await admin.end();
    }
  });

  /** Every metric of the table for this process is exposed with its type and labels, and moved. */
  /**
   * Counters only a dead or stalled worker moves (a takeover needs a run whose lease expired, and
   * this suite's one worker must live through it): present here, moved in the fault suite.
   */
  const IN_FAULT_SUITE: Record<string, string> = { yuxi_run_takeovers_total: 'test/faults/workers.test.ts, scenario a (a worker killed mid-turn, the survivor takes over)' };
  // Checked elsewhere: a shell command (components/bwrap-limits), firing (e2e/automations-firing), the sweep's gauges
  // (e2e/automations-schedule), retention (e2e/retention, e2e/session-purge: they move the lifecycle clock).
  const MOVED_ELSEWHERE = new Set([...['yuxi_sandbox_commands_total', 'yuxi_sandbox_command_duration_seconds', 'yuxi_sandbox_limit_hits_total'], ...['yuxi_automation_invocations_total', 'yuxi_automation_fire_lag_seconds', 'yuxi_automations_active', 'yuxi_automations_due'], ...['yuxi_retention_rows_removed_total', 'yuxi_retention_bytes_removed_total', 'yuxi_retention_lag_seconds', 'yuxi_retention_failures_total', 'yuxi_session_purge_quarantined_total']]);

  async function assertMovedOn(process: Process): Promise<void> {
    const now = await scrapeOf(process);
    const rows = documentedMetrics().filter((row) => row.processes.includes(process));
    assert.ok(rows.length >= 9, `the table lists the ${process}'s metrics`);
    for (const row of rows) {
      assert.equal(now.types.get(row.name), row.type, `${row.name} is exposed as a ${row.type}`);
      const samples = now.samples.filter((s) => s.name === row.name || s.name.startsWith(`${row.name}_`));
      assert.ok(samples.length > 0, `${row.name} has samples`);
      for (const sample of samples) {
        const labels = Object.keys(sample.labels).filter((l) => l !== 'app' && l !== 'le').sort();
        assert.deepEqual(labels, [...row.labels].sort(), `${sample.name} has the documented labels`);
      }
      if (MOVED_ELSEWHERE.has(row.name)) continue;
      if (row.type === 'gauge') {
        const seen = observed[process].get(row.name);
        assert.ok(seen !== undefined, `${row.name} was observed while it showed something`);
        assert.notEqual(seen.to, seen.from, `${row.name} moved`);
      } else if (!IN_FAULT_SUITE[row.name]) {
        const series = row.type === 'histogram' ? `${row.name}_count` : row.name;
        assert.ok(total(now, series) > total(baseline[process], series), `${row.name} moved on the ${process}`);
      }
    }
  }

  const delta = (now: Scrape, process: Process, name: string, where: Record<string, string>): number => total(now, name, where) - total(baseline[process], name, where);

  it('a client that stops reading is cut from its stream', { timeout: 180_000 }, async () => {
    const session = await createSession();
    const witness = await SseStream.open(session.id);
    const slow = new RawSseClient(session.id);
    try {
      await slow.until('agent.session.created');
      slow.stopReading();
      await turnsUntilCut(session.id, witness);
    } finally {
      slow.destroy();
      witness.close();
    }
  });

  it('every api metric of docs/metrics.md is present and moved', async () => {
    await assertMovedOn('api');
    const now = await scrapeOf('api');
    assert.ok(delta(now, 'api', 'yuxi_inputs_accepted_total', { type: 'agent.session.input.message' }) >= 6);
    assert.ok(delta(now, 'api', 'yuxi_inputs_accepted_total', { type: 'agent.session.input.cancel' }) >= 1);
    assert.ok(delta(now, 'api', 'yuxi_turns_finished_total', { outcome: 'cancelled' }) >= 1, 'the waiting turn cancelled by the api');
    assert.ok(delta(now, 'api', 'yuxi_http_request_duration_seconds_count', { method: 'POST', status: '201' }) >= 4);
  });

  it('every worker metric of docs/metrics.md is present and moved (run takeovers: in the fault suite)', async () => {
    await assertMovedOn('worker');
    const now = await scrapeOf('worker');
    const moved = (name: string, where: Record<string, string>): number => delta(now, 'worker', name, where);
    assert.ok(moved('yuxi_turns_finished_total', { outcome: 'completed' }) >= 5);
    assert.ok(moved('yuxi_turns_finished_total', { outcome: 'failed' }) >= 1);
    assert.ok(moved('yuxi_turn_duration_seconds_count', { outcome: 'completed' }) >= 5);
    assert.ok(moved('yuxi_tool_calls_total', { source: 'builtin', outcome: 'success' }) >= 1, 'the calculator call');
    assert.ok(moved('yuxi_model_calls_total', { provider: 'scripted', outcome: 'ok' }) >= 2);
    assert.ok(moved('yuxi_model_calls_total', { provider: 'scripted', outcome: 'model_bad_request' }) >= 1);
    assert.ok(moved('yuxi_model_calls_total', { provider: 'openai', outcome: 'ok' }) >= 1);
    assert.ok(moved('yuxi_provider_tokens_total', { provider: 'openai', kind: 'input' }) >= 12);
    assert.ok(moved('yuxi_provider_tokens_total', { provider: 'openai', kind: 'output' }) >= 2);
    assert.ok(moved('yuxi_provider_tokens_total', { provider: 'openai', kind: 'cached' }) >= 4, 'cached tokens are counted');
    assert.ok(moved('yuxi_model_tokens_total', { type: 'cached' }) >= 4 && moved('yuxi_model_tokens_total', { type: 'input' }) >= 12, 'committed calls\' tokens');
    assert.ok(moved('yuxi_model_cost_microusd_total', {}) >= 14, 'the priced call\'s cost');
    assert.ok(moved('yuxi_model_call_duration_seconds_count', { provider: 'openai' }) >= 1);
    assert.ok(moved('yuxi_queue_job_wait_seconds_count', { queue: 'session-dispatch' }) >= 5);
    assert.ok(moved('yuxi_webhook_attempts_total', { outcome: 'succeeded' }) >= 2, 'the webhook deliveries');
    assert.ok(moved('yuxi_webhook_attempt_duration_seconds_count', {}) >= 4);
    assert.ok(moved('yuxi_queue_job_wait_seconds_count', { queue: 'webhooks' }) >= 1);
  });
});

// A client of its own on the stack's Redis, with a registry of its own: which failures count.
describe('Redis error counting', () => {
  const redisUrl = env.redisUrl;

  it('counts commands that failed for want of Redis, not error replies nor a deliberate disconnect', async () => {
    const target = new Metrics();
    target.register('worker');
    const errors = async (): Promise<number> => total(parseExposition(await target.scrape()), 'yuxi_redis_errors_total', { component: 'probe' });
    const redis = instrumentRedis(new Redis(redisUrl, { commandTimeout: 200, maxRetriesPerRequest: 1 }), 'probe', target);
    try {
      await assert.rejects(redis.eval(`return redis.error_reply('an answer, not a failure')`, 0), /an answer/);
      assert.equal(await errors(), 0);
      // The server holds BLPOP for 5 s; the client gives up after 200 ms.
      await assert.rejects(redis.blpop(`yuxi-test-nothing-${randomUUID()}`, 5), /Command timed out/);
      assert.equal(await errors(), 1);
    } finally {
      redis.disconnect();
    }
    const closing = instrumentRedis(new Redis(redisUrl), 'probe', target);
    await closing.ping();
    const pending = closing.blpop(`yuxi-test-nothing-${randomUUID()}`, 5);
    closing.disconnect();
    await assert.rejects(pending, /Connection is closed/);
    assert.equal(await errors(), 1, 'commands flushed by disconnect() are not failures');
  });
});
