// `npm run bench`: starts its own stack (as `npm start` does, on a throwaway data dir), drives it
// from this separate process, and writes bench/results/<date>.json plus the table in
// docs/benchmarks.md. Each scenario reports latency percentiles, throughput, CPU and peak RSS of
// api and worker, next to a baseline measured in the same run.
//
//   npm run bench                 all scenarios
//   npm run bench -- turn submit  only scenarios whose name contains one of the words (written to
//                                 bench/results/<date>.partial.json; the docs table is left alone)
import { fork, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ensureBuilt, ensureConsoleBuilt, ROOT } from '../scripts/lib/build.mjs';

await ensureBuilt();
// The console scenario opens /console: the api serves it only once built.
if (process.argv.slice(2).length === 0 || process.argv.slice(2).some((w) => 'console'.includes(w))) await ensureConsoleBuilt();
const { startStack } = await import('../scripts/lib/stack.mjs');
const { default: autocannon } = await import('autocannon');
const { Queue } = await import('bullmq');
const { Redis } = await import('ioredis');
const { EventSource } = await import('eventsource');
const { default: pg } = await import('pg');
const { Client, nextEvent, opened, publishedAtMs, rawSubscribe } = await import('./lib/client.mjs');
const { cpuSeconds, cpuSnapshot, round, rssKiB, summarize, watch } = await import('./lib/measure.mjs');
const { consoleScenario } = await import('./lib/console.mjs');
const { measureTurnBudget } = await import('./lib/budget.mjs');
const { ensureChromium } = await import('../scripts/lib/infra.mjs');
// The shared fake OpenAI-compatible server of the tests (compiled by ensureBuilt); it scripts answers per model name.
const { startFakeOpenAi } = await import('../dist/test/support/fake-openai.js');

const only = process.argv.slice(2);
const wanted = (name) => only.length === 0 || only.some((word) => name.includes(word));
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
const results = { date: new Date().toISOString(), machine: machineInfo(), scenarios: {} };

try {
  // First, on a quiet stack: counts per echo turn (statements, transactions, WAL, Redis commands, CPU).
  if (wanted('budget')) results.scenarios.budget = await budgetScenario();
  if (wanted('turn')) results.scenarios.turn_overhead = await turnOverhead();
  if (wanted('tool-turn')) results.scenarios.tool_turn = await toolTurn();
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
  // Last: it adds 100,000 sessions, which no other scenario should find.
  if (wanted('console')) results.scenarios.console = await consoleScenario({ stack, client, apiKey, pg, chromiumPath: ensureChromium((...a) => log(...a)), log });
  writeReport(results);
} finally {
  for (const fn of stopAll.reverse()) await fn().catch(() => undefined);
  await stack.stop();
  await fakeOpenAi.close();
}

// ---------------------------------------------------------------- scenarios

/** What one echo turn costs, counted (bench/lib/budget.mjs); the budget test holds the counts to bench/budget.json. */
async function budgetScenario() {
  log('budget…');
  const measured = await measureTurnBudget({ client, databaseUrl: stack.env.DATABASE_URL, redisUrl: stack.env.REDIS_URL, pids, turns: 300, sessions: 10 });
  const budget = JSON.parse(readFileSync(path.join(ROOT, 'bench', 'budget.json'), 'utf8'));
  // Informational here: this stack's periodic work (the outbox relay every 500 ms, the sweeps) runs
  // during the measurement and adds a fraction of a statement per turn; the budget test holds the
  // counts on a stack with that work out of the window.
  return { ...measured, budget: budget.per_echo_turn };
}

/** Submit → turn.completed seen on SSE, scripted:echo without delay, one session at a time. */
async function turnOverhead(iterations = 300, warmup = 30) {
  log('turn overhead…');
  const session = await client.createSession();
  const source = client.subscribe(session.id);
  await opened(source);
  const turn = async (i) => {
    const started = performance.now();
    const completed = nextEvent(source, 'agent.session.turn.completed');
    await client.send(session.id, `ping ${i}`);
    await completed;
    return performance.now() - started;
  };
  for (let i = 0; i < warmup; i += 1) await turn(i);
  const samples = [];
  const w = watch(pids);
  for (let i = 0; i < iterations; i += 1) samples.push(await turn(i));
  const usage = w.stop();
  source.close();
  const latency = summarize(samples);
  return {
    description: 'POST …/events → agent.session.turn.completed on SSE; scripted:echo, no delay; sequential on one session',
    latency_ms: latency,
    throughput_per_s: round(iterations / usage.wall_s),
    ...usage,
    target: 'p50 ≤ 25 ms, p99 ≤ 100 ms',
    met: latency.p50 <= 25 && latency.p99 <= 100,
  };
}

/**
 * One tool step through a real `openai:` model (the fake server on the wire): model call 1 asks for
 * the builtin calculator, the worker runs it and stores call and output, model call 2 answers.
 * Baseline: the same agent definition answering at once (one model call). Tool and text turns
 * alternate, each on its own session and SSE stream, so both see the same machine noise.
 */
async function toolTurn(iterations = 300, warmup = 30) {
  log('tool turn…');
  const turns = warmup + iterations;
  const answer = { text: ['2+2 = ', '4'] };
  const tools = [{ type: 'builtin', name: 'calculator' }];
  // Everything is scripted up front: the fake answers in order, per model name.
  fakeOpenAi.script(
    'bench-tool',
    Array.from({ length: turns }, (_, i) => [{ tool_calls: [{ id: `call_bench_${i}`, name: 'calculator', arguments: '{"expression":"2+2"}' }] }, answer]).flat(),
  );
  fakeOpenAi.script('bench-text', Array.from({ length: turns }, () => answer));
  await client.putAgent('bench-tool', { name: 'Bench tool turn', model: 'openai:bench-tool', tools });
  await client.putAgent('bench-text', { name: 'Bench text turn', model: 'openai:bench-text', tools });
  const open = async (agentId) => {
    const session = await client.createSession(undefined, agentId);
    const source = client.subscribe(session.id);
    await opened(source);
    return { session, source };
  };
  const tool = await open('bench-tool');
  const text = await open('bench-text');
  const turn = async ({ session, source }, i) => {
    const started = performance.now();
    const completed = nextEvent(source, 'agent.session.turn.completed');
    await client.send(session.id, `what is 2+2? (${i})`);
    const { data } = await completed;
    return { ms: performance.now() - started, turnId: data.turn_id };
  };
  for (let i = 0; i < warmup; i += 1) {
    await turn(tool, i);
    await turn(text, i);
  }
  const toolSamples = [];
  const textSamples = [];
  let lastToolTurn;
  const w = watch(pids);
  for (let i = warmup; i < turns; i += 1) {
    const t = await turn(tool, i);
    toolSamples.push(t.ms);
    lastToolTurn = t.turnId;
    textSamples.push((await turn(text, i)).ms);
  }
  const usage = w.stop();
  tool.source.close();
  text.source.close();

  // The tool really ran: every second call carried the calculator's output back, and the last turn stored it.
  const toolRequests = fakeOpenAi.requests('bench-tool');
  const toolOutputs = toolRequests.filter((r) => r.messages.at(-1)?.role === 'tool' && r.messages.at(-1).content === '4').length;
  const items = await client.turnItems(tool.session.id, lastToolTurn);
  const stored = items.map((item) => item.type + (item.role ? `:${item.role}` : '')).join(' → ');
  const storedOk = items.some((item) => item.type === 'function_call' && item.name === 'calculator') && items.some((item) => item.type === 'function_call_output' && item.output === '4');

  const latency = summarize(toolSamples);
  const baseline = summarize(textSamples);
  const ok = toolRequests.length === 2 * turns && toolOutputs === turns && fakeOpenAi.requests('bench-text').length === turns && storedOk;
  return {
    description: 'POST …/events → agent.session.turn.completed on SSE; openai: model on the fake server: tool call (builtin calculator) + text answer; sequential on one session, alternating with the baseline',
    latency_ms: latency,
    // Sequential turns per second of the tool turns alone (the baseline's time is not counted).
    throughput_per_s: round((1000 * iterations) / toolSamples.reduce((a, b) => a + b, 0)),
    ...usage,
    model_calls: { tool: toolRequests.length, text: fakeOpenAi.requests('bench-text').length },
    tool_outputs_returned: toolOutputs,
    last_turn_items: stored,
    baseline: { name: 'text turn through the fake server (same agent definition, one model call), same session setup, alternating', latency_ms: baseline },
    ratio_p50_to_baseline: round(latency.p50 / baseline.p50, 2),
    ratio_p99_to_baseline: round(latency.p99 / baseline.p99, 2),
    tool_step_overhead_p50_ms: round(latency.p50 - baseline.p50),
    target: null,
    checks_passed: ok,
  };
}

/**
 * Turn overhead against the length of the history (the model context is built from the
 * items since the last compaction, so building it must not grow with the session). One session is
 * seeded with `longTurns` echo turns (two items each: the user message and the answer); short
 * sessions with 2 turns (4 items), each measured `perShort` times before the next one takes over,
 * so short turns see 4–8 items of history and the long one ≥ 200 throughout. Short and long turns
 * alternate (which goes first alternates too), so both see the same machine noise; the CPU each
 * process used during each turn is charged to its kind.
 */
async function longSession(rounds = 100, longTurns = 100, perShort = 3) {
  log('long session: seeding…');
  const started = performance.now();
  const open = async () => {
    const session = await client.createSession();
    const source = client.subscribe(session.id);
    await opened(source);
    return { session, source };
  };
  const turn = async ({ session, source }, text) => {
    const begun = performance.now();
    const completed = nextEvent(source, 'agent.session.turn.completed');
    await client.send(session.id, text);
    const { data } = await completed;
    return { ms: performance.now() - begun, inputTokens: data.turn.yuxi.usage?.input_tokens ?? null };
  };
  const long = await open();
  const shorts = await Promise.all(Array.from({ length: Math.ceil(rounds / perShort) }, open));
  // History within a session is sequential; the sessions are seeded side by side.
  await Promise.all([
    (async () => {
      for (let i = 0; i < longTurns; i += 1) await turn(long, `history ${i}`);
    })(),
    ...shorts.map(async (short) => {
      for (let i = 0; i < 2; i += 1) await turn(short, `history ${i}`);
    }),
  ]);
  const all = [long, ...shorts].map((s) => s.session.id);
  const seeded = await itemCounts(all);
  log(`long session: seeded ${seeded.get(long.session.id)} items and ${shorts.length} × 4 in ${round((performance.now() - started) / 1000, 1)} s; measuring…`);

  const kinds = ['short', 'long'];
  const samples = { short: [], long: [] };
  const tokens = { short: [], long: [] };
  const cpu = { short: {}, long: {} };
  const measured = new Map(all.map((id) => [id, 0]));
  // One snapshot between two turns (reading Postgres's CPU walks /proc): what the processes used since the last one goes to the turn just measured.
  let last;
  const measure = async (kind, target, i) => {
    const t = await turn(target, `ping ${i}`);
    const now = cpuSnapshot(pids);
    for (const name of Object.keys(now)) cpu[kind][name] = (cpu[kind][name] ?? 0) + now[name] - last[name];
    last = now;
    samples[kind].push(t.ms);
    tokens[kind].push(t.inputTokens);
    measured.set(target.session.id, measured.get(target.session.id) + 1);
  };
  const w = watch(pids);
  last = cpuSnapshot(pids);
  for (let i = 0; i < rounds; i += 1) {
    const targets = { short: shorts[Math.floor(i / perShort)], long };
    for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) await measure(kind, targets[kind], i);
  }
  const usage = w.stop();
  for (const s of [long, ...shorts]) s.source.close();

  // Every turn stored its two items; the histories the turns saw, from the counts before and after.
  const final = await itemCounts(all);
  const itemsOk = all.every((id) => final.get(id) === seeded.get(id) + 2 * measured.get(id)) && seeded.get(long.session.id) >= 2 * longTurns && shorts.every((s) => seeded.get(s.session.id) === 4);
  const seen = (sessions) => ({ min: Math.min(...sessions.map((s) => seeded.get(s.session.id))), max: Math.max(...sessions.map((s) => final.get(s.session.id) - 2)) });
  const perTurn = (kind) => Object.fromEntries(Object.entries(cpu[kind]).map(([name, seconds]) => [name, round((1000 * seconds) / samples[kind].length)]));
  const range = (values) => (values.includes(null) ? null : { min: Math.min(...values), max: Math.max(...values) });

  const latency = summarize(samples.long);
  const baseline = summarize(samples.short);
  const ratio = round(latency.p50 / baseline.p50, 2);
  const ok = itemsOk && samples.long.length === rounds && samples.short.length === rounds;
  return {
    description: `POST …/events → agent.session.turn.completed on SSE; scripted:echo, no delay; one session with ≥ ${2 * longTurns} items of history, alternating turn by turn with sessions of 4–8 items`,
    latency_ms: latency,
    // Sequential turns per second of the long session's turns alone (the baseline's time is not counted).
    throughput_per_s: round((1000 * rounds) / samples.long.reduce((a, b) => a + b, 0)),
    ...usage,
    history_items: { long: seen([long]), short: seen(shorts) },
    // Words the scripted model was shown (its stand-in for input tokens): the size of the context built.
    model_input_tokens: { long: range(tokens.long), short: range(tokens.short) },
    cpu_ms_per_turn: { long: perTurn('long'), short: perTurn('short') },
    seconds_total: round((performance.now() - started) / 1000, 1),
    baseline: { name: 'the same echo turn on sessions with 4–8 items of history, alternating', latency_ms: baseline },
    ratio_p50_to_baseline: ratio,
    ratio_p90_to_baseline: round(latency.p90 / baseline.p90, 2),
    target: 'p50 with ≥ 200 items of history ≤ 1.2 × p50 with 4–8 items',
    checks_passed: ok,
    met: ok && ratio <= 1.2,
  };
}

/** Items stored per session (Postgres). */
async function itemCounts(sessionIds) {
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  const { rows } = await db.query('SELECT session_id, count(*)::int AS n FROM items WHERE session_id = ANY($1) GROUP BY session_id', [sessionIds]);
  await db.end();
  const counts = new Map(sessionIds.map((id) => [id, 0]));
  for (const row of rows) counts.set(row.session_id, row.n);
  return counts;
}

/** 200 sessions, each submitting its next follow-up as soon as the previous turn completed. */
async function sustainedTurns(sessions = 200, seconds = 15) {
  log('sustained turns…');
  const baseline = await postgresCommitRate(8, 5);
  const run = await sustainedLoad([client], pids, sessions, seconds);
  return {
    description: `${sessions} sessions, each sending its next follow-up when its previous turn completed, for ${seconds} s`,
    ...run,
    baseline: { name: 'Postgres single-row INSERT commits (pg, 8 clients, autocommit)', commits_per_s: baseline },
    ratio_to_baseline: round(run.turns_per_s / baseline, 3),
    target: '≥ 200 turns/s, no errors',
    met: run.turns_per_s >= 200 && run.errors === 0,
  };
}

/**
 * `sessions` sessions spread over the api replicas behind `clients` (round robin), each sending its
 * next follow-up when its previous turn completed (seen on its SSE stream, on the same replica),
 * for `seconds`. CPU per turn counts every process in `pids`, Postgres and Redis.
 */
async function sustainedLoad(clients, processPids, sessions, seconds) {
  const open = [];
  for (let i = 0; i < sessions; i += 1) {
    const via = clients[i % clients.length];
    const session = await via.createSession();
    open.push({ via, session, source: via.subscribe(session.id) });
  }
  await Promise.all(open.map((c) => opened(c.source)));
  let completed = 0;
  let errors = 0;
  const turnLatencies = [];
  const deadline = performance.now() + seconds * 1000;
  const w = watch(processPids);
  await Promise.all(
    open.map(async ({ via, session, source }) => {
      while (performance.now() < deadline) {
        const started = performance.now();
        try {
          const done = nextEvent(source, 'agent.session.turn.completed');
          await via.send(session.id, 'sustained');
          await done;
          completed += 1;
          turnLatencies.push(performance.now() - started);
        } catch (error) {
          errors += 1;
          log('sustained error:', String(error));
        }
      }
    }),
  );
  const usage = w.stop();
  for (const c of open) c.source.close();
  const turnsPerS = round(completed / usage.wall_s);
  // Every app process + Postgres + Redis (the load generator excluded), per completed turn.
  const appPct = Object.values(usage.processes).reduce((sum, p) => sum + p.cpu_pct, 0);
  const cpuPct = appPct + usage.postgres_cpu_pct + usage.redis_cpu_pct;
  return { turns_per_s: turnsPerS, cpu_ms_per_turn: round((cpuPct * 10) / turnsPerS), completed, errors, latency_ms: summarize(turnLatencies), ...usage };
}

/**
 * Scale-out: the same sustained load on this stack (1 api, 1 worker), then with a second api and a
 * second worker on the same Postgres and Redis (sessions split over both apis; the queue spreads
 * turns over both workers), alternating, in one run. What a second replica buys where this
 * machine's cores are already shared by everything.
 */
async function scaleOut(sessions = 200, seconds = 10, rounds = 2) {
  log('scale-out…');
  const { launch, stopChild, waitForHealth, SCRIPTS } = await import('../scripts/lib/stack.mjs');
  const { freePort } = await import('../scripts/lib/infra.mjs');
  const logDir = path.join(ROOT, '.data', 'bench-logs');
  const rows = { one: [], two: [] };
  for (let i = 0; i < rounds; i += 1) {
    rows.one.push(await sustainedLoad([client], pids, sessions, seconds));
    const port = await freePort();
    const api2 = launch('api-2', SCRIPTS.api, { ...stack.env, PORT: String(port) }, logDir);
    const worker2 = launch('worker-2', SCRIPTS.worker, { ...stack.env, WORKER_HEALTH_PORT: '0' }, logDir);
    try {
      await waitForHealth(`http://127.0.0.1:${port}/health`, [api2, worker2], 60_000);
      const second = new Client(`http://127.0.0.1:${port}`, apiKey);
      rows.two.push(await sustainedLoad([client, second], { ...pids, 'api-2': api2.pid, 'worker-2': worker2.pid }, sessions, seconds));
    } finally {
      await stopChild(api2);
      await stopChild(worker2);
    }
  }
  const mean = (list, pick) => round(list.reduce((sum, x) => sum + pick(x), 0) / list.length);
  const one = { turns_per_s: mean(rows.one, (x) => x.turns_per_s), cpu_ms_per_turn: mean(rows.one, (x) => x.cpu_ms_per_turn), machine_cpu_busy_pct: mean(rows.one, (x) => x.machine_cpu_busy_pct) };
  const two = { turns_per_s: mean(rows.two, (x) => x.turns_per_s), cpu_ms_per_turn: mean(rows.two, (x) => x.cpu_ms_per_turn), machine_cpu_busy_pct: mean(rows.two, (x) => x.machine_cpu_busy_pct) };
  return {
    description: `${sessions} sessions of sustained echo turns for ${seconds} s: 1 api × 1 worker, then 2 api × 2 workers on the same Postgres and Redis, alternating ${rounds} times`,
    one_by_one: one,
    two_by_two: two,
    ratio_turns_per_s: round(two.turns_per_s / one.turns_per_s, 3),
    runs: rows,
  };
}

async function postgresCommitRate(clients, seconds) {
  const admin = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await admin.connect();
  await admin.query('CREATE SCHEMA IF NOT EXISTS bench; CREATE TABLE IF NOT EXISTS bench.commits (id bigserial PRIMARY KEY, v int)');
  let commits = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      const c = new pg.Client({ connectionString: stack.env.DATABASE_URL });
      await c.connect();
      while (performance.now() < deadline) {
        await c.query('INSERT INTO bench.commits (v) VALUES ($1)', [commits]);
        commits += 1;
      }
      await c.end();
    }),
  );
  const rate = round(commits / ((performance.now() - started) / 1000));
  await admin.query('DROP SCHEMA bench CASCADE');
  await admin.end();
  return rate;
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

/**
 * 5,000 SSE subscribers on one api process while a turn streams 20 deltas per second. 100 of them
 * are full `eventsource` clients whose delivery lag is measured; the rest read the same stream
 * and only count delta frames, so the two cores go to the server rather than to client parsing.
 */
async function fanOut(subscribers = 5000, measured = 100, words = 200, delayMs = 50) {
  log(`SSE fan-out: opening ${subscribers} subscribers…`);
  const session = await client.createSession();
  const redis = new Redis(stack.env.REDIS_URL);
  const redisClientsBefore = await connectedClients(redis);
  const rssBefore = rssKiB(pids.api);

  // A first, unmeasured turn warms the api's JIT; counters only run during the measured turn.
  let measuring = false;
  const lags = [];
  let deltas = 0;
  let completedCount = 0;
  let allCompleted;
  let done = new Promise((resolve) => (allCompleted = resolve));
  const completedOne = () => {
    completedCount += 1;
    if (completedCount === subscribers) allCompleted();
  };
  const sources = [];
  for (let i = 0; i < measured; i += 1) {
    const source = client.subscribe(session.id);
    source.addEventListener('agent.session.turn.output_text.delta', (event) => {
      if (!measuring) return;
      deltas += 1;
      lags.push(Date.now() - publishedAtMs(event.lastEventId));
    });
    source.addEventListener('agent.session.turn.completed', completedOne);
    sources.push(source);
  }
  await Promise.all(sources.map((s) => opened(s, 60_000)));
  const raw = [];
  for (let i = measured; i < subscribers; i += 250) {
    const batch = Array.from({ length: Math.min(250, subscribers - i) }, () =>
      rawSubscribe(client, session.id, {
        onDeltas: (n) => {
          if (measuring) deltas += n;
        },
        onCompleted: completedOne,
      }),
    );
    raw.push(...(await Promise.all(batch)));
  }
  const rssAfterOpen = rssKiB(pids.api);
  const redisClientsOpen = await connectedClients(redis);

  await client.send(session.id, `warm up [[words:40]] [[delay:${delayMs}]]`);
  await done;
  completedCount = 0;
  done = new Promise((resolve) => (allCompleted = resolve));
  measuring = true;
  const w = watch(pids);
  await client.send(session.id, `[[words:${words}]] [[delay:${delayMs}]]`);
  await done;
  const usage = w.stop();
  const redisClientsDuring = await connectedClients(redis);
  for (const source of sources) source.close();
  for (const r of raw) r.close();
  redis.disconnect();
  const baseline = await rawSseBaseline(subscribers, measured, words, delayMs);
  // A shrinking heap (GC while opening) makes the difference meaningless: report it as unmeasured.
  const perConnectionKiB = rssAfterOpen > rssBefore ? round((rssAfterOpen - rssBefore) / subscribers) : null;
  const lag = summarize(lags);
  return {
    description: `${subscribers} SSE subscribers on one api process (${measured} eventsource clients measured for lag, the rest counting frames); one turn streaming ${words} deltas at ${1000 / delayMs}/s`,
    delivery_lag_ms: lag,
    baseline: { name: 'raw Node http server writing the same frames from memory, same subscribers and load generator', delivery_lag_ms: baseline },
    ratio_p99_to_baseline: baseline.p99 > 0 ? round(lag.p99 / baseline.p99, 2) : null,
    deltas_delivered: deltas,
    deltas_expected: subscribers * words,
    api_rss_per_connection_kib: perConnectionKiB,
    redis_connected_clients: { before: redisClientsBefore, with_subscribers: redisClientsOpen, during_turn: redisClientsDuring },
    ...usage,
    target: 'p99 delivery lag ≤ 250 ms, ≤ 30 KB RSS per connection, Redis connections constant',
    met: lag.p99 <= 250 && perConnectionKiB !== null && perConnectionKiB <= 30 && redisClientsOpen === redisClientsBefore && deltas === subscribers * words,
  };
}

/**
 * 20,000 idle SSE subscribers on one api process: what each costs in api memory, and
 * what heartbeating them all costs in api CPU. The subscribers are spread over `sessionCount`
 * sessions and held by `generators` child processes, each from its own source address (127.0.0.x)
 * so that ephemeral ports and per-process file descriptors suffice. The count is capped by the
 * api's own file-descriptor limit (a socket each), which the report states.
 */
async function idleSubscribers(target = 20000, sessionCount = 200, generators = 4, idleS = 31) {
  const heartbeatMs = Number(stack.env.SSE_HEARTBEAT_MS ?? 15000);
  const fdLimit = openFilesLimit(pids.api);
  const fdsInUse = readdirSync(`/proc/${pids.api}/fd`).length;
  // Room for what the api opens besides the streams (Postgres pool, Redis, logs) while they are open.
  const subscribers = Math.min(target, fdLimit - fdsInUse - 200);
  log(`idle subscribers: ${subscribers} of ${target} (api file descriptors: limit ${fdLimit}, ${fdsInUse} in use)…`);
  const sessionIds = [];
  for (let i = 0; i < sessionCount; i += 1) sessionIds.push((await client.createSession()).id);
  const redis = new Redis(stack.env.REDIS_URL);
  const redisClientsBefore = await connectedClients(redis);
  const rssBefore = rssKiB(pids.api);
  const heapBefore = await apiHeapUsedKiB();

  const children = Array.from({ length: generators }, () => fork(path.join(ROOT, 'bench/lib/idle-clients.mjs'), [], { stdio: 'inherit' }));
  const ask = (child, message) => new Promise((resolve) => { child.once('message', resolve); child.send(message); });
  try {
    const opening = performance.now();
    const w = watch(pids);
    const perChild = Math.ceil(subscribers / generators);
    const opened = await Promise.all(
      children.map((child, k) =>
        ask(child, { open: { url: stack.url, apiKey, sessionIds, count: Math.min(perChild, subscribers - k * perChild), localAddress: `127.0.0.${10 + k}`, concurrency: 50 } }),
      ),
    );
    const openUsage = w.stop();
    const openS = (performance.now() - opening) / 1000;
    const open = opened.reduce((sum, o) => sum + o.opened, 0);
    const failed = opened.reduce((sum, o) => sum + o.failed, 0);
    const errors = [...new Set(opened.flatMap((o) => o.errors))];
    // Settle: what opening allocated and let go is collected before memory is read.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const rssOpen = rssKiB(pids.api);
    const heapOpen = await apiHeapUsedKiB();
    const redisClientsOpen = await connectedClients(redis);

    // Idle: nothing is published; the api only heartbeats (a comment on each stream, slots refreshed).
    const statsBefore = await Promise.all(children.map((child) => ask(child, 'stats')));
    const cpuBefore = cpuSeconds(pids.api);
    const idleW = watch(pids);
    await new Promise((resolve) => setTimeout(resolve, idleS * 1000));
    const idleUsage = idleW.stop();
    const cpuIdle = cpuSeconds(pids.api) - cpuBefore;
    const statsAfter = await Promise.all(children.map((child) => ask(child, 'stats')));
    const pings = statsAfter.reduce((sum, s) => sum + s.pings, 0) - statsBefore.reduce((sum, s) => sum + s.pings, 0);
    const stillOpen = statsAfter.reduce((sum, s) => sum + s.open, 0);
    const rssIdle = rssKiB(pids.api);
    const heartbeats = idleS / (heartbeatMs / 1000);
    await Promise.all(children.map((child) => ask(child, 'close')));
    redis.disconnect();
    const perConnectionKiB = open > 0 ? round((rssOpen - rssBefore) / open) : null;
    return {
      description: `${open} idle SSE subscribers on one api process over ${sessionCount} sessions (target ${target}; capped by the api's file-descriptor limit ${fdLimit}), held by ${generators} load-generator processes; ${idleS} s idle with SSE_HEARTBEAT_MS=${heartbeatMs}`,
      subscribers_target: target,
      subscribers_open: open,
      subscribers_failed: failed,
      open_errors: errors,
      api_fd_limit: fdLimit,
      open_s: round(openS),
      opens_per_s: round(open / openS),
      open_usage: openUsage,
      api_rss_kib: { before: rssBefore, open: rssOpen, after_idle: rssIdle },
      api_heap_used_kib: { before: heapBefore, open: heapOpen },
      api_rss_per_connection_kib: perConnectionKiB,
      api_heap_per_connection_kib: heapBefore !== null && heapOpen !== null && open > 0 ? round((heapOpen - heapBefore) / open) : null,
      idle_s: idleS,
      api_idle_cpu_pct: round((100 * cpuIdle) / idleS),
      api_cpu_ms_per_heartbeat: round((1000 * cpuIdle) / heartbeats),
      api_cpu_us_per_connection_heartbeat: open > 0 ? round((1e6 * cpuIdle) / heartbeats / open) : null,
      pings_received_per_connection: open > 0 ? round(pings / open) : null,
      still_open_after_idle: stillOpen,
      redis_connected_clients: { before: redisClientsBefore, with_subscribers: redisClientsOpen },
      ...idleUsage,
      target: '20,000 idle subscribers held (or as many as the api\'s file-descriptor limit allows), ≤ 30 KB RSS per connection, every one heartbeated, Redis connections constant',
      met: open === subscribers && stillOpen === open && perConnectionKiB !== null && perConnectionKiB <= 30 && pings >= open && redisClientsOpen === redisClientsBefore,
    };
  } finally {
    for (const child of children) child.kill();
  }
}

/** The soft limit on open files of a process (its sockets count against it). */
function openFilesLimit(pid) {
  const line = readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  return Number(line?.split(/\s+/)[3]);
}

/** The api's V8 heap in use, from its own /metrics (prom-client's default metrics). */
async function apiHeapUsedKiB() {
  const text = await (await fetch(`${stack.url}/metrics`)).text();
  const value = /^(?:yuxi_)?nodejs_heap_size_used_bytes(?:\{[^}]*\})? (\S+)$/m.exec(text)?.[1];
  return value === undefined ? null : round(Number(value) / 1024);
}

/** The same fan-out against bench/raw-sse-server.mjs: the lag floor of this machine and load generator. */
async function rawSseBaseline(subscribers, measured, words, delayMs) {
  log(`SSE fan-out baseline: raw Node server, ${subscribers} subscribers…`);
  const child = fork(path.join(ROOT, 'bench/raw-sse-server.mjs'), [], { stdio: 'ignore' });
  const { port } = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`raw SSE server exited ${code}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    const lags = [];
    let completed = 0;
    let allCompleted;
    const done = new Promise((resolve) => (allCompleted = resolve));
    const completedOne = () => {
      completed += 1;
      if (completed === subscribers) allCompleted();
    };
    const sources = [];
    for (let i = 0; i < measured; i += 1) {
      const source = new EventSource(`${url}/events`);
      source.addEventListener('agent.session.turn.output_text.delta', (event) => lags.push(Date.now() - Number(event.lastEventId)));
      source.addEventListener('agent.session.turn.completed', completedOne);
      sources.push(source);
    }
    await Promise.all(sources.map((s) => opened(s, 60_000)));
    const raw = [];
    for (let i = measured; i < subscribers; i += 250) {
      const batch = Array.from({ length: Math.min(250, subscribers - i) }, () => rawStream(`${url}/events`, completedOne));
      raw.push(...(await Promise.all(batch)));
    }
    await fetch(`${url}/emit?count=${words}&delay=${delayMs}`, { method: 'POST' });
    await done;
    for (const source of sources) source.close();
    for (const r of raw) r.close();
    return summarize(lags);
  } finally {
    child.kill('SIGTERM');
  }
}

/** Reads a raw SSE stream without parsing it, noticing only the end of the turn. */
function rawStream(url, onCompleted) {
  const COMPLETED = Buffer.from('event: agent.session.turn.completed');
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.on('data', (chunk) => {
        if (chunk.includes(COMPLETED)) onCompleted();
      });
      resolve({ close: () => req.destroy() });
    });
    req.on('error', reject);
  });
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

async function connectedClients(redis) {
  const info = await redis.info('clients');
  return Number(/connected_clients:(\d+)/.exec(info)?.[1] ?? NaN) - 1;
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

function machineInfo() {
  return { cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model, memory_gib: round(os.totalmem() / 2 ** 30, 1), node: process.version, platform: `${os.type()} ${os.release()}` };
}

function writeReport(report) {
  const day = report.date.slice(0, 10);
  const resultsDir = path.join(ROOT, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  // A run of some scenarios only must not replace the full report of the day.
  const partial = only.length > 0;
  const file = path.join(resultsDir, partial ? `${day}.partial.json` : `${day}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  log(`results: ${path.relative(ROOT, file)}`);

  const rows = [];
  const s = report.scenarios;
  const cpu = (x) =>
    x?.processes
      ? `api ${x.processes.api.cpu_pct} % / worker ${x.processes.worker.cpu_pct} % (Postgres ${x.postgres_cpu_pct} %, Redis ${x.redis_cpu_pct} %, load generator ${x.load_generator_cpu_pct} %; machine ${x.machine_cpu_busy_pct} % busy)`
      : '';
  const rss = (x) => (x?.processes ? `api ${x.processes.api.peak_rss_mib} / worker ${x.processes.worker.peak_rss_mib}` : '');
  const ok = (x) => (x.met ? 'met' : '**missed**');
  if (s.budget) {
    const t = s.budget;
    const by = t.cpu_ms_per_turn_by_process;
    const limits = Object.entries(t.budget).map(([name, most]) => `${name.replace(/_per_turn$/, '')} ≤ ${most}`).join(', ');
    rows.push(`| budget per echo turn (${t.turns} sequential turns) | — | ${t.statements_per_turn} SQL statements, ${t.transactions_per_turn} write transactions, ${t.wal_bytes_per_turn} WAL bytes, ${t.redis_commands_per_turn} Redis commands | — | ${t.cpu_ms_per_turn} ms CPU per turn: api ${by.api} / worker ${by.worker} / Postgres ${by.postgres} / Redis ${by.redis} | — | bench/budget.json (held by test/budget without periodic work): ${limits} | — |`);
  }
  if (s.turn_overhead) {
    const t = s.turn_overhead;
    rows.push(`| turn overhead | p50 ${t.latency_ms.p50} / p95 ${t.latency_ms.p95} / p99 ${t.latency_ms.p99} | ${t.throughput_per_s} turns/s | — | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.tool_turn) {
    const t = s.tool_turn;
    const checked = t.checks_passed ? `${t.tool_outputs_returned} tool outputs returned` : `**checks failed** (${t.tool_outputs_returned} tool outputs, model calls ${t.model_calls.tool}/${t.model_calls.text})`;
    rows.push(`| tool turn (fake OpenAI, 1 calculator step) | p50 ${t.latency_ms.p50} / p95 ${t.latency_ms.p95} / p99 ${t.latency_ms.p99} | ${t.throughput_per_s} turns/s, ${checked} | text turn via fake p50 ${t.baseline.latency_ms.p50} / p99 ${t.baseline.latency_ms.p99} (p50 ×${t.ratio_p50_to_baseline}, p99 ×${t.ratio_p99_to_baseline}; +${t.tool_step_overhead_p50_ms} ms per tool step) | ${cpu(t)} | ${rss(t)} | — | — |`);
  }
  if (s.long_session) {
    const t = s.long_session;
    const h = t.history_items;
    const checked = t.checks_passed ? '' : ', **checks failed**';
    rows.push(`| long session (${h.long.min}–${h.long.max} items of history) | p50 ${t.latency_ms.p50} / p90 ${t.latency_ms.p90} / p99 ${t.latency_ms.p99} | ${t.throughput_per_s} turns/s; worker CPU ${t.cpu_ms_per_turn.long.worker} vs ${t.cpu_ms_per_turn.short.worker} ms/turn${checked} | ${h.short.min}–${h.short.max} items p50 ${t.baseline.latency_ms.p50} / p90 ${t.baseline.latency_ms.p90} (p50 ×${t.ratio_p50_to_baseline}, p90 ×${t.ratio_p90_to_baseline}) | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.sustained_turns) {
    const t = s.sustained_turns;
    rows.push(`| sustained turns (200 sessions) | p50 ${t.latency_ms.p50} / p95 ${t.latency_ms.p95} / p99 ${t.latency_ms.p99} | ${t.turns_per_s} turns/s, ${t.errors} errors, ${t.cpu_ms_per_turn} ms CPU per turn | Postgres commits ${t.baseline.commits_per_s}/s (×${t.ratio_to_baseline}) | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.scale_out) {
    const t = s.scale_out;
    rows.push(`| scale-out: 2 api × 2 workers | — | ${t.two_by_two.turns_per_s} turns/s, ${t.two_by_two.cpu_ms_per_turn} ms CPU per turn (machine ${t.two_by_two.machine_cpu_busy_pct} % busy) | 1 api × 1 worker ${t.one_by_one.turns_per_s} turns/s, ${t.one_by_one.cpu_ms_per_turn} ms CPU per turn (×${t.ratio_turns_per_s}) | — | — | — | — |`);
  }
  if (s.console) {
    const t = s.console;
    const f = Object.entries(t.api_filters_ms).map(([name, x]) => `${name} p50 ${x.p50}`).join(', ');
    rows.push(`| console (${t.items} items; 100,000 sessions) | session page first visit ${t.session_page_ms.first_visit} ms, warm p50 ${t.session_page_ms.warm.p50}; explorer first visit ${t.explorer_page_ms.first_visit}, warm p50 ${t.explorer_page_ms.warm.p50} | admin search first page p50 ${t.api_first_page_ms.p50} / p99 ${t.api_first_page_ms.p99} ms; ${t.api_cursor_walk_ms.pages} cursor pages p50 ${t.api_cursor_walk_ms.p50} / max ${t.api_cursor_walk_ms.max} ms; ${f} | — | — | — | ${t.target} | ${ok(t)} |`);
  }
  for (const [name, label] of [['submit', 'submit c=50'], ['replay', 'replay c=50'], ['read', 'read c=50']]) {
    const t = s[name];
    if (!t) continue;
    rows.push(`| ${label} | p50 ${t.ours.latency_ms.p50} / p90 ${t.ours.latency_ms.p90} / p99 ${t.ours.latency_ms.p99} | ${t.ours.requests_per_s} req/s, ${t.ours.non_2xx} non-2xx${t.duplicates !== undefined ? `, ${t.duplicates} duplicates` : ''} | bare route ${t.baseline.requests_per_s} req/s, p99 ${t.baseline.latency_ms.p99} (×${t.ratio_to_baseline}) | ${cpu(t.ours)} | ${rss(t.ours)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.sse_fanout) {
    const t = s.sse_fanout;
    rows.push(`| SSE fan-out (5,000 subscribers) | lag p50 ${t.delivery_lag_ms.p50} / p95 ${t.delivery_lag_ms.p95} / p99 ${t.delivery_lag_ms.p99} | ${t.deltas_delivered}/${t.deltas_expected} deltas, ${t.api_rss_per_connection_kib} KiB/conn, Redis clients ${t.redis_connected_clients.before}→${t.redis_connected_clients.with_subscribers} | raw Node SSE server lag p50 ${t.baseline.delivery_lag_ms.p50} / p99 ${t.baseline.delivery_lag_ms.p99} (p99 ×${t.ratio_p99_to_baseline}) | ${cpu(t)} | ${rss(t)} | ${t.target} | ${ok(t)} |`);
  }
  if (s.idle_subscribers) {
    const t = s.idle_subscribers;
    rows.push(`| idle SSE subscribers (${t.subscribers_open} of ${t.subscribers_target} open; fd limit ${t.api_fd_limit}) | — | opened ${t.opens_per_s}/s, ${t.subscribers_failed} failed; ${t.pings_received_per_connection} heartbeats per connection in ${t.idle_s} s, ${t.still_open_after_idle} still open | — | idle api ${t.api_idle_cpu_pct} % (${t.api_cpu_ms_per_heartbeat} ms per heartbeat of all, ${t.api_cpu_us_per_connection_heartbeat} µs per connection) | api RSS ${round(t.api_rss_kib.open / 1024)} MiB: ${t.api_rss_per_connection_kib} KiB/conn (heap ${t.api_heap_per_connection_kib} KiB/conn); Redis clients ${t.redis_connected_clients.before}→${t.redis_connected_clients.with_subscribers} | ${t.target} | ${ok(t)} |`);
  }
  if (s.peer) {
    const t = s.peer;
    rows.push(`| peer: ${t.peer.name} ${t.peer.version} | p50 ${t.peer.latency_ms.p50} / p95 ${t.peer.latency_ms.p95} / p99 ${t.peer.latency_ms.p99} | ${t.peer.throughput_per_s} turns/s | ours p50 ${t.our_turn_p50_ms} ms (×${t.ratio_ours_to_peer}) | — | — | ${t.target} | ${ok(t)} |`);
  }
  const table = [
    `Run of ${report.date} on ${report.machine.cpus} × ${report.machine.cpu_model}, ${report.machine.memory_gib} GiB, Node ${report.machine.node}.`,
    '',
    '| scenario | latency (ms) | throughput | baseline (same run) | CPU (api / worker) | peak RSS MiB (api / worker) | target | |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
  if (partial) {
    log(`partial run: docs/benchmarks.md left as it is\n${table}`);
    return;
  }
  const docFile = path.join(ROOT, 'docs', 'benchmarks.md');
  const doc = readFileSync(docFile, 'utf8');
  const begin = '<!-- bench:results:begin -->';
  const end = '<!-- bench:results:end -->';
  const updated = doc.replace(new RegExp(`${begin}[\\s\\S]*${end}`), `${begin}\n${table}\n${end}`);
  writeFileSync(docFile, updated);
  log(`table: docs/benchmarks.md\n${table}`);
}
