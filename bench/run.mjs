// `npm run bench`: starts its own stack (as `npm start` does, on a throwaway data dir), drives it
// from this separate process, and writes bench/results/<date>.json plus the table in
// docs/benchmarks.md. Each scenario reports latency percentiles, throughput, CPU and peak RSS of
// api and worker, next to a baseline measured in the same run.
//
//   npm run bench                 all scenarios
//   npm run bench -- turn submit  only scenarios whose name contains one of the words (written to
//                                 bench/results/<date>.partial.json; the docs table is left alone)
//   npm run bench -- budget --tracing   (or BENCH_TRACING=on) the stack traces (TRACING=on, spans
//                                 kept per session, no exporter): what tracing costs, next to a run
//                                 without the flag (tracing off, the default); never the docs table
//   npm run bench -- soak         the soak (issue 43): never in the no-argument run, only when named
//                                 (BENCH_SOAK_TURNS, BENCH_SOAK_SESSIONS, BENCH_SOAK_CONCURRENCY size it);
//                                 named alone, its stack sweeps retention every second (BENCH_SOAK_SWEEP_MS)
import { fork, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBuilt, ensureConsoleBuilt, ROOT } from '../scripts/lib/build.mjs';

await ensureBuilt();
// The console scenario opens /console: the api serves it only once built.
const words = process.argv.slice(2).filter((word) => !word.startsWith('--'));
if (words.length === 0 || words.some((w) => 'console'.includes(w))) await ensureConsoleBuilt();
const { startStack } = await import('../scripts/lib/stack.mjs');
const { default: autocannon } = await import('autocannon');
const { Queue } = await import('bullmq');
const { default: pg } = await import('pg');
const { Client } = await import('./lib/client.mjs');
const { round, watch } = await import('./lib/measure.mjs');
const { turnScenarios } = await import('./lib/turn-scenarios.mjs');
const { loadScenarios } = await import('./lib/load-scenarios.mjs');
const { fanOutScenarios } = await import('./lib/fanout-scenarios.mjs');
const { environmentScenarios } = await import('./lib/environment-scenarios.mjs');
const { machineInfo, writeReport } = await import('./lib/report.mjs');
const { consoleScenario } = await import('./lib/console.mjs');
const { automationScenarios } = await import('./lib/automation-scenarios.mjs');
const { forkScenarios } = await import('./lib/fork-scenarios.mjs');
const { storageScenarios } = await import('./lib/storage-scenarios.mjs');
const { deletedSessionsPurge, outboxAgeOut } = await import('./lib/storage-purges.mjs');
const { soakOptions, soakScenarios } = await import('./lib/soak-scenario.mjs');
const { measureTurnBudget } = await import('./lib/budget.mjs');
const { ensureChromium } = await import('../scripts/lib/infra.mjs');
// The shared fake OpenAI-compatible server of the tests (compiled by ensureBuilt); it scripts answers per model name.
const { startFakeOpenAi } = await import('../dist/test/support/fake-openai.js');

const argv = process.argv.slice(2);
// Tracing on (store only) for this run's stack; off otherwise, whatever the shell exports.
const tracing = argv.includes('--tracing') || process.env.BENCH_TRACING === 'on';
const only = argv.filter((word) => !word.startsWith('--'));
const wanted = (name) => only.length === 0 || only.some((word) => name.includes(word));
// The soak takes the machine for long (20,000 turns by default): only when a word names it, never
// in the no-argument run (`wanted` is true for every scenario there).
const named = (name) => only.some((word) => name.includes(word));
// Its purge waits for the worker's retention sweep (every 60 s by default: dozens of ticks for 2,000
// deleted sessions). Swept faster only when the soak runs alone, so that no other scenario (the
// budget's per-turn counts above all) ever runs on a stack that sweeps more often than a deployment.
const soakAlone = only.length > 0 && only.every((word) => word === 'soak');
const log = (...args) => console.log('[bench]', ...args);

const apiKey = `yx_bench_${randomBytes(24).toString('base64url')}`;
// Started in this process, before the stack, so the worker's `openai:` models reach it (tool-turn scenario).
const fakeOpenAi = await startFakeOpenAi(0);
const stack = await startStack({
  dataDir: path.join(os.tmpdir(), `yuxi-bench-${process.pid}`),
  ephemeral: true,
  logDir: path.join(ROOT, '.data', 'bench-logs'),
  env: {
    BOOTSTRAP_API_KEY: apiKey,
    WORKER_HEALTH_PORT: '0',
    OPENAI_BASE_URL: fakeOpenAi.url,
    OPENAI_API_KEY: 'sk-bench-fake',
    // The limiter still runs on every request (its cost is measured); its limits are out of the way,
    // and so is the stream cap of the fan-out scenario's one key.
    RATE_LIMIT_PER_MINUTE: '100000000',
    END_USER_RATE_LIMIT_PER_MINUTE: '100000000',
    MAX_STREAMS_PER_PRINCIPAL: '100000',
    USER_RATE_LIMIT_PER_MINUTE: '100000000',
    APP_RATE_LIMIT_PER_MINUTE: '100000000',
    MAX_STREAMS_PER_ACCOUNT: '100000',
    NEW_END_USERS_PER_MINUTE: '100000000',
    // The measured hot path is the default one, whatever the shell exports: no model-request audit.
    MODEL_REQUEST_AUDIT: 'off',
    // The automations scenario keeps 1,000 active under the bench key's one owner.
    AUTOMATION_MAX_PER_OWNER: '2000',
    // Its schedules fire every 30 s, more often than a deployment's default minimum interval allows.
    AUTOMATION_MIN_INTERVAL_S: '1',
    // Traces: off (the default a deployment has), or with --tracing on and kept per session only
    // (no collector: an exporter's cost is the network's, not ours), with the SDK's default batching.
    TRACING: tracing ? 'on' : 'off',
    OTEL_EXPORTER_OTLP_ENDPOINT: '',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
    // The storage scenario moves the lifecycle clock past SESSION_PURGE_AFTER_S to run the purge of
    // deleted sessions now (retention keeps its deployment defaults: the sweep every 60 s).
    LIFECYCLE_CLOCK_ADJUSTABLE: 'true',
    ...(soakAlone ? { RETENTION_SWEEP_MS: process.env.BENCH_SOAK_SWEEP_MS || '1000' } : {}),
  },
});
const stopAll = [];
process.on('SIGINT', () => void shutdown(130));
process.on('SIGTERM', () => void shutdown(143));
async function shutdown(code) {
  for (const fn of stopAll.reverse()) await fn().catch(() => undefined);
  await stack.stop();
  await fakeOpenAi.close();
  process.exit(code);
}

const pids = Object.fromEntries(stack.children.map((child) => [child.name, child.pid]));
const client = new Client(stack.url, apiKey);
const results = { date: new Date().toISOString(), machine: machineInfo(), tracing: tracing ? 'on' : 'off', scenarios: {} };
// The scenarios of bench/lib, each group over this stack and client.
const bench = { stack, client, pids, log, apiKey, fakeOpenAi };
const { turnOverhead, toolTurn, longSession } = turnScenarios(bench);
const { sustainedTurns, scaleOut } = loadScenarios(bench);
const { fanOut, idleSubscribers } = fanOutScenarios(bench);
const { shellTurn } = environmentScenarios({ ...bench, sandbox: await benchSandbox() });
const { automations } = automationScenarios(bench);
const { fork: forkScenario } = forkScenarios(bench);
const { storage } = storageScenarios(bench);
const { soak } = soakScenarios(bench);

try {
  // First, on a quiet stack: counts per echo turn (statements, transactions, WAL, Redis commands, CPU).
  if (wanted('budget')) results.scenarios.budget = await budgetScenario();
  if (wanted('turn')) results.scenarios.turn_overhead = await turnOverhead();
  if (wanted('tool-turn')) results.scenarios.tool_turn = await toolTurn();
  if (wanted('shell-turn')) results.scenarios.shell_turn = await shellTurn();
  if (wanted('long-session')) results.scenarios.long_session = await longSession();
  if (wanted('sustained')) results.scenarios.sustained_turns = await sustainedTurns();
  if (wanted('scale-out')) results.scenarios.scale_out = await scaleOut();
  if (wanted('submit') || wanted('replay') || wanted('read')) {
    const bare = await startBareServer();
    stopAll.push(bare.stop);
    if (wanted('submit')) results.scenarios.submit = await submitScenario(bare);
    if (wanted('replay')) results.scenarios.replay = await replayScenario(bare);
    if (wanted('read')) results.scenarios.read = await readScenario(bare);
  }
  if (wanted('fanout')) results.scenarios.sse_fanout = await fanOut();
  if (wanted('idle-subscribers')) results.scenarios.idle_subscribers = await idleSubscribers();
  if (wanted('peer')) results.scenarios.peer = await peerScenario(results.scenarios.turn_overhead);
  if (wanted('automations')) results.scenarios.automations = await automations();
  if (wanted('fork')) results.scenarios.fork = await forkScenario();
  // What turns leave in Postgres and Redis, and what is left once their sessions are deleted (issue 43).
  if (wanted('storage')) {
    const earlier = Object.keys(results.scenarios);
    results.scenarios.storage = await storage({ ageOut: outboxAgeOut(client), purges: [deletedSessionsPurge(client)] });
    // Relation sizes per turn hold on a fresh database only: after other scenarios, the free space
    // their vacuumed rows left absorbs new rows, so the relations grow less than the turns wrote
    // (the row bytes are exact either way). Run `npm run bench -- storage` alone for those figures.
    results.scenarios.storage.relations_partial = earlier.length > 0 ? `ran after ${earlier.join(', ')}: relation sizes are partial (free space reused)` : false;
  }
  // Turns, deletions and the purge at scale (issue 43's soak); the purge's wait scales with the sweep.
  if (named('soak')) results.scenarios.soak = await soak({ ...soakOptions(), purge: deletedSessionsPurge(client, { maxWaitS: soakAlone ? 1800 : 7200 }) });
  // Last: it adds 100,000 sessions, which no other scenario should find.
  if (wanted('console')) results.scenarios.console = await consoleScenario({ stack, client, apiKey, pg, chromiumPath: ensureChromium((...a) => log(...a)), log });
  // A run with tracing on is a comparison, never the docs table of the default configuration.
  writeReport(results, { partial: only.length > 0 || tracing, log });
} finally {
  for (const fn of stopAll.reverse()) await fn().catch(() => undefined);
  await stack.stop();
  await fakeOpenAi.close();
}

// ---------------------------------------------------------------- scenarios

/** The worker's sandbox runner, run from here with the deployment's default limits (the shell-turn scenario's `sandbox alone`). */
async function benchSandbox() {
  const { BwrapSandbox, prepareWorkspaceDir } = await import('../dist/libs/sandbox/src/index.js');
  const runner = new BwrapSandbox({ uid: 65534, gid: 65534 });
  stopAll.push(() => runner.close());
  const limits = { timeoutS: 30, cpuS: 30, memoryMb: 2048, processes: 64, fileSizeMb: 64, outputBytes: 65_536 };
  const network = { access: 'disabled', allowedDomains: [], blockedDomains: [] };
  return {
    async run(dir, command) {
      await prepareWorkspaceDir(dir, 65534, 65534);
      return runner.run({ workspaceDir: dir, command, env: {}, limits, network, signal: new AbortController().signal });
    },
  };
}

/** What one echo turn costs, counted (bench/lib/budget.mjs); the budget test holds the counts to bench/budget.json. */
async function budgetScenario() {
  log(`budget (tracing ${tracing ? 'on' : 'off'})…`);
  // With tracing on, spans reach their store in batches (OTEL_BSP_SCHEDULE_DELAY, 5 s by default):
  // the measurement waits that long (and a second more) before each snapshot, so that the window
  // holds the store writes of exactly its own turns (and a few seconds of periodic work).
  const settleMs = tracing ? Number(process.env.OTEL_BSP_SCHEDULE_DELAY || 5000) + 1000 : 0;
  const common = { client, databaseUrl: stack.env.DATABASE_URL, redisUrl: stack.env.REDIS_URL, pids, turns: 300, sessions: 10, settleMs };
  const measured = await measureTurnBudget(common);
  const budget = JSON.parse(readFileSync(path.join(ROOT, 'bench', 'budget.json'), 'utf8'));
  // Informational here: this stack's periodic work (the outbox relay every 500 ms, the sweeps) runs
  // during the measurement and adds a fraction of a statement per turn; the budget test holds the
  // counts on a stack with that work out of the window.
  // The same turns with a budget in each session's scope: the check before the model call, its
  // reservation and the release with the ledger row, against the unbudgeted turns just measured.
  const budgeted = await measureTurnBudget({ ...common, budgeted: true });
  return { tracing: tracing ? 'on (TRACING=on, per-session store only, no exporter)' : 'off', ...measured, budget: budget.per_echo_turn, budgeted_turn: budgeted };
}

/**
 * The submit path alone: the dispatch queue is paused so worker turns do not compete for the two
 * cores; the accepted inputs are cancelled afterwards so they do not run in later scenarios.
 */
async function submitScenario(bare) {
  log('submit…');
  const sessions = await Promise.all(Array.from({ length: 50 }, () => client.createSession()));
  const queue = new Queue('session-dispatch', { connection: { url: stack.env.REDIS_URL } });
  await queue.pause();
  try {
    let i = 0;
    // autocannon applies setupRequest per entry of `requests`: a fresh key and a rotating session each time.
    const ours = await cannon({
      url: client.baseUrl,
      requests: [
        {
          method: 'POST',
          path: `/api/v1/agents/sessions/${sessions[0].id}/events`,
          headers: client.headers(),
          body: JSON.stringify({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: 'bench submit' }] }),
          setupRequest: (request) => {
            i += 1;
            return { ...request, path: `/api/v1/agents/sessions/${sessions[i % sessions.length].id}/events`, headers: { ...request.headers, 'idempotency-key': randomUUID() } };
          },
        },
      ],
    });
    const base = await cannon({ url: `${bare.url}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":1}' }, false);
    await cancelPending(sessions.map((s) => s.id));
    return compareHttp('POST …/events with a fresh Idempotency-Key each, c=50 (worker paused)', ours, base, {
      target: '≥ 1,000 req/s, p99 ≤ 100 ms',
      met: ours.requests_per_s >= 1000 && ours.latency_ms.p99 <= 100 && ours.non_2xx === 0,
    });
  } finally {
    await queue.resume();
    await queue.close();
  }
}

async function replayScenario(bare) {
  log('replay…');
  const session = await client.createSession();
  const queue = new Queue('session-dispatch', { connection: { url: stack.env.REDIS_URL } });
  await queue.pause();
  const key = `replay-${randomUUID()}`;
  try {
    const ours = await cannon({
      url: `${client.api}/sessions/${session.id}/events`,
      method: 'POST',
      headers: client.headers({ 'idempotency-key': key }),
      body: JSON.stringify({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: 'bench replay' }] }),
    });
    const base = await cannon({ url: `${bare.url}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x":1}' }, false);
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    const inputs = (await db.query('SELECT count(*)::int AS n FROM inputs WHERE session_id = $1', [session.id])).rows[0].n;
    await db.end();
    await cancelPending([session.id]);
    return compareHttp('POST …/events replaying one Idempotency-Key, c=50', ours, base, {
      inputs_created: inputs,
      duplicates: inputs - 1,
      target: '≥ 2,000 req/s, 0 duplicates',
      met: ours.requests_per_s >= 2000 && inputs === 1 && ours.non_2xx === 0,
    });
  } finally {
    await queue.resume();
    await queue.close();
  }
}

async function readScenario(bare) {
  log('read…');
  const session = await client.createSession('read me');
  const ours = await cannon({ url: `${client.api}/sessions/${session.id}`, headers: client.headers() });
  const base = await cannon({ url: `${bare.url}/bare` }, false);
  const ratio = ours.requests_per_s / base.requests_per_s;
  return compareHttp('GET /sessions/{id}, c=50', ours, base, { target: '≥ 50 % of the bare route req/s', met: ratio >= 0.5 && ours.non_2xx === 0 });
}

async function peerScenario(ourTurn) {
  log('peer (LangGraph.js dev server)…');
  const { measurePeer } = await import('./lib/peer.mjs');
  const peer = await measurePeer({ iterations: 200, warmup: 20, log });
  const ourP50 = ourTurn?.latency_ms.p50;
  const ratio = ourP50 === undefined ? null : round(ourP50 / peer.p50, 4);
  return {
    description: 'LangGraph.js dev server (in-memory), same zero-delay echo turn: create thread + run and wait',
    peer: { name: peer.name, version: peer.version, latency_ms: { p50: peer.p50, p95: peer.p95, p99: peer.p99, mean: peer.mean }, throughput_per_s: peer.throughput_per_s },
    our_turn_p50_ms: ourP50 ?? null,
    ratio_ours_to_peer: ratio,
    target: 'our p50 turn latency ≤ 1/20 of the peer’s',
    met: ratio !== null && ratio <= 0.05,
  };
}

// ---------------------------------------------------------------- helpers

async function cannon(options, measureOurs = true) {
  const w = measureOurs ? watch(pids) : null;
  const result = await autocannon({ connections: 50, duration: 10, ...options });
  const usage = w?.stop();
  return {
    requests_per_s: round(result.requests.average),
    latency_ms: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    total: result.requests.total,
    non_2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    ...(usage ?? {}),
  };
}

function compareHttp(description, ours, base, extra) {
  return {
    description,
    ours,
    baseline: { name: 'bare Nest + Express route, same machine, same load', ...base },
    ratio_to_baseline: round(ours.requests_per_s / base.requests_per_s, 3),
    ...extra,
  };
}

async function cancelPending(sessionIds) {
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  await db.query(`UPDATE inputs SET status = 'cancelled', cancelled_at = now() WHERE status = 'pending' AND session_id = ANY($1)`, [sessionIds]);
  await db.end();
}

async function startBareServer() {
  const child = fork(path.join(ROOT, 'dist/bench/bare-server.js'), [], { env: { ...process.env, PORT: '0' }, stdio: 'ignore' });
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`bare server exited ${code}`)));
  });
  const port = await listeningPort(child.pid);
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      child.kill('SIGTERM');
    },
  };
}

/** The TCP port a process listens on, from ss (the bare server picks a free one). */
async function listeningPort(pid) {
  const out = await new Promise((resolve) => {
    const ss = spawn('ss', ['-ltnp'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let text = '';
    ss.stdout.on('data', (chunk) => (text += chunk));
    ss.on('exit', () => resolve(text));
  });
  const line = out.split('\n').find((l) => l.includes(`pid=${pid},`));
  const port = Number(/:(\d+)\s/.exec(line ?? '')?.[1]);
  if (!port) throw new Error('bare server port not found');
  return port;
}
