// The bench's load scenarios (bench/run.mjs): sustained turns over many sessions, next to the
// Postgres commit rate of the machine, and the scale-out to two api and two worker processes.
import path from 'node:path';
import pg from 'pg';
import { ROOT } from '../../scripts/lib/build.mjs';
import { Client, nextEvent, opened } from './client.mjs';
import { round, summarize, watch } from './measure.mjs';

export function loadScenarios({ stack, client, pids, log, apiKey }) {
  return { sustainedTurns, scaleOut };

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
}
