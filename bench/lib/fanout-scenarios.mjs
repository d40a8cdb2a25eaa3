// The bench's SSE scenarios (bench/run.mjs): a turn fanned out to thousands of subscribers, next
// to a raw Node SSE server, and tens of thousands of idle subscribers held open.
import { fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { EventSource } from 'eventsource';
import { Redis } from 'ioredis';
import { ROOT } from '../../scripts/lib/build.mjs';
import { opened, publishedAtMs, rawSubscribe } from './client.mjs';
import { cpuSeconds, round, rssKiB, summarize, watch } from './measure.mjs';

export function fanOutScenarios({ stack, client, pids, log, apiKey }) {
  return { fanOut, idleSubscribers };

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

  async function connectedClients(redis) {
    const info = await redis.info('clients');
    return Number(/connected_clients:(\d+)/.exec(info)?.[1] ?? NaN) - 1;
  }
}
