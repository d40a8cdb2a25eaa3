// The cost of an echo turn, counted rather than timed: SQL statements (pg_stat_statements deltas),
// write transactions (transaction ids consumed), WAL bytes, Redis commands (INFO commandstats
// deltas) and CPU seconds per process, divided by the turns run. `npm run bench -- budget` reports
// them; test/budget/turn-budget.test.ts holds the counts to bench/budget.json, so a change that adds
// a round trip to every turn fails CI instead of hiding in the noise of a timed run.
//
// Counts are exact for what they count: pg_stat_statements is updated when each statement ends
// (unlike pg_stat_database, flushed about once a second per backend), transaction ids come from the
// current snapshot's xmax, and Redis counts every command, those its scripts run included. What
// varies from run to run is timing-driven work: a blocking read that returns one event rather than
// two, a queue poll that times out. The budget file leaves room for that, not for a new statement.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { Redis } from 'ioredis';
import { cpuSnapshot, round } from './measure.mjs';
import { nextEvent, opened } from './client.mjs';

/** The measuring connection's own queries, left out of the statement counts. */
const OWN_QUERIES = /pg_stat_statements|pg_current_wal_lsn|pg_current_snapshot|pg_database|CREATE EXTENSION/i;

/** The budget file: the most each count may reach per echo turn. */
export function readBudget(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/**
 * Runs `turns` echo turns through the public API, one at a time (each session posts a follow-up and
 * waits for `agent.session.turn.completed` on its open SSE stream, round robin over `sessions`),
 * after one warm-up turn per session (statements are prepared per connection on first use), and
 * returns what they cost per turn.
 *
 * @param {object} options
 * @param {import('./client.mjs').Client} options.client
 * @param {string} options.databaseUrl
 * @param {string} options.redisUrl
 * @param {Record<string, number>} options.pids api and worker pids (CPU per process)
 * @param {number} [options.turns]
 * @param {number} [options.sessions]
 * @param {boolean} [options.budgeted] each session under a budget of its own (limits far from reached):
 *   what the check before each call, its reservation and release cost a turn
 * @param {number} [options.settleMs] wait this long before each snapshot: work a process does in
 *   batches after a turn (tracing's span store) lands inside the window of the turns that caused it
 */
export async function measureTurnBudget({ client, databaseUrl, redisUrl, pids, turns = 200, sessions = 10, budgeted = false, settleMs = 0 }) {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const redis = new Redis(redisUrl, { connectionName: 'yuxi-budget', maxRetriesPerRequest: 1 });
  const open = [];
  try {
    // Idempotent, and only where it is preloaded (the embedded Postgres of npm start, tests and bench).
    await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    for (let i = 0; i < sessions; i += 1) {
      const session = await client.createSession();
      if (budgeted) await client.createBudget({ scope: { session_id: session.id }, limits: { cost_microusd: 1e12, model_calls: 1e9 }, period: 'lifetime', on_exceeded: 'pause' });
      const source = client.subscribe(session.id);
      open.push({ session, source });
    }
    await Promise.all(open.map((s) => opened(s.source)));
    const turn = async ({ session, source }, text) => {
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await client.send(session.id, text);
      await completed;
    };
    for (const s of open) await turn(s, 'warm-up');

    if (settleMs > 0) await sleep(settleMs);
    const before = await snapshot(db, redis, pids);
    for (let i = 0; i < turns; i += 1) await turn(open[i % open.length], `budget ${i}`);
    if (settleMs > 0) await sleep(settleMs);
    const after = await snapshot(db, redis, pids);
    return { ...perTurn(before, after, turns, sessions, budgeted), ...(settleMs > 0 ? { settle_ms_before_each_snapshot: settleMs } : {}) };
  } finally {
    for (const s of open) s.source.close();
    redis.disconnect();
    await db.end();
  }
}

async function snapshot(db, redis, pids) {
  const statements = await db.query(
    `SELECT queryid::text AS id, calls::bigint AS calls, query FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  const { rows } = await db.query(
    `SELECT pg_current_wal_lsn()::text AS lsn, pg_snapshot_xmax(pg_current_snapshot())::text AS next_xid`,
  );
  const commandstats = parseCommandStats(await redis.info('commandstats'));
  return { statements: statements.rows, lsn: rows[0].lsn, nextXid: BigInt(rows[0].next_xid), commandstats, cpu: cpuSnapshot(pids) };
}

/** `INFO commandstats` → { command: calls }, without INFO itself (the measuring client's). */
export function parseCommandStats(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (match && match[1] !== 'info') out[match[1]] = Number(match[2]);
  }
  return out;
}

/** A WAL position `X/Y` as a byte offset. */
export function lsnBytes(lsn) {
  const [high, low] = lsn.split('/');
  return BigInt(`0x${high}`) * 0x100000000n + BigInt(`0x${low}`);
}

/** The differences of two snapshots, per turn; statements and Redis commands itemised, largest first. */
export function perTurn(before, after, turns, sessions, budgeted = false) {
  const callsBefore = new Map(before.statements.map((s) => [s.id, Number(s.calls)]));
  const statements = [];
  for (const s of after.statements) {
    if (OWN_QUERIES.test(s.query)) continue;
    const calls = Number(s.calls) - (callsBefore.get(s.id) ?? 0);
    if (calls > 0) statements.push({ per_turn: round(calls / turns, 3), query: s.query.replace(/\s+/g, ' ').slice(0, 160) });
  }
  statements.sort((a, b) => b.per_turn - a.per_turn);
  const commands = [];
  for (const [name, calls] of Object.entries(after.commandstats)) {
    const delta = calls - (before.commandstats[name] ?? 0);
    if (delta > 0) commands.push({ command: name, per_turn: round(delta / turns, 3) });
  }
  commands.sort((a, b) => b.per_turn - a.per_turn);
  const cpu = {};
  let cpuTotal = 0;
  for (const name of Object.keys(after.cpu)) {
    const ms = ((after.cpu[name] - before.cpu[name]) * 1000) / turns;
    cpu[name] = round(ms);
    cpuTotal += ms;
  }
  const sum = (list) => list.reduce((total, entry) => total + entry.per_turn, 0);
  return {
    description: `${turns} echo turns${budgeted ? ' (each session under a budget of its own)' : ''} after one warm-up turn on each of ${sessions} sessions, one at a time (POST a follow-up, wait for agent.session.turn.completed on the open SSE stream); deltas of pg_stat_statements, transaction ids, WAL position, Redis INFO commandstats and /proc CPU, per turn`,
    turns,
    statements_per_turn: round(sum(statements), 2),
    // Write transactions: each consumes one transaction id (read-only ones take none).
    transactions_per_turn: round(Number(after.nextXid - before.nextXid) / turns, 2),
    wal_bytes_per_turn: round(Number(lsnBytes(after.lsn) - lsnBytes(before.lsn)) / turns, 0),
    redis_commands_per_turn: round(sum(commands), 2),
    cpu_ms_per_turn: round(cpuTotal),
    cpu_ms_per_turn_by_process: cpu,
    statements,
    redis_commands: commands,
  };
}
