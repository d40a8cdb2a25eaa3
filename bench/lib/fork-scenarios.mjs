// The bench's fork scenario (`npm run bench -- fork`) and the counting that
// test/budget/fork-budget.test.ts holds: what one fork costs (latency, SQL statements, rows written)
// for sources of 10, 1,000 and 10,000 items, and how fast a fork's items pages read next to its
// source's. A fork shares its source's history by reference (README "Fork"), so its cost must not
// grow with the history: the table shows the three sizes side by side.
//
// Statements are pg_stat_statements call deltas (as bench/lib/budget.mjs counts an echo turn).
// Rows written are counted in the tables themselves: every row version whose xmin is a transaction
// that began in the window (inserted, or updated, there), table by table. pg_stat_statements' `rows`
// would miss the rows a data-modifying CTE writes (it counts what the statement returns), and
// pg_stat_user_tables is flushed by each backend about once a second, so neither is exact here.
// Rows deleted in the window are not counted (a fork deletes nothing). The histories are made
// through the public API (20-message inputs answered by scripted:echo, as the console scenario does).
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { nextEvent, opened } from './client.mjs';
import { round, summarize } from './measure.mjs';

/** The measuring connection's own queries, left out of the statement counts. */
const OWN_QUERIES = /pg_stat_statements|pg_current_snapshot|pg_database|pg_class|xmin::text|CREATE EXTENSION/i;
const XID_SPAN = 2n ** 32n;

/** POST …/fork with a fresh key: `{ status, body }`. */
export async function forkSession(client, sessionId, body = {}) {
  const res = await fetch(`${client.api}/sessions/${sessionId}/fork`, { method: 'POST', headers: client.headers({ 'idempotency-key': randomUUID() }), body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

/**
 * A session of `items` items made through the API: inputs of up to 20 user messages, each turn
 * answered by scripted:echo (one more item), one turn at a time on its open stream.
 */
export async function seedSession(client, items) {
  const session = await client.createSession(undefined);
  const source = client.subscribe(session.id);
  await opened(source);
  try {
    for (let made = 0, turn = 0; made < items; turn += 1) {
      const messages = Math.max(1, Math.min(20, items - made - 1));
      const input = Array.from({ length: messages }, (_, i) => ({ role: 'user', content: [{ type: 'input_text', text: `turn ${turn} message ${i}` }] }));
      const completed = nextEvent(source, 'agent.session.turn.completed');
      const res = await fetch(`${client.api}/sessions/${session.id}/events`, {
        method: 'POST',
        headers: client.headers({ 'idempotency-key': randomUUID() }),
        body: JSON.stringify({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input }] }),
      });
      if (res.status !== 202) throw new Error(`seed: ${res.status} ${await res.text()}`);
      await completed;
      made += messages + 1;
    }
  } finally {
    source.close();
  }
  return session;
}

/** The count of a session's own items (a fork's are 0 until its first turn: nothing is copied). */
export async function ownItems(db, sessionId) {
  return (await db.query('SELECT count(*)::int AS n FROM items WHERE session_id = $1', [sessionId])).rows[0].n;
}

async function countSnapshot(db) {
  const statements = await db.query(
    `SELECT queryid::text AS id, calls::bigint AS calls, query FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  const { rows } = await db.query('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next_xid');
  return { statements: statements.rows, nextXid: BigInt(rows[0].next_xid) };
}

function statementsBetween(before, after) {
  const callsBefore = new Map(before.statements.map((s) => [s.id, Number(s.calls)]));
  const out = [];
  for (const s of after.statements) {
    if (OWN_QUERIES.test(s.query)) continue;
    const calls = Number(s.calls) - (callsBefore.get(s.id) ?? 0);
    if (calls > 0) out.push({ calls, query: s.query.replace(/\s+/g, ' ').slice(0, 160) });
  }
  return out.sort((a, b) => b.calls - a.calls);
}

/** Rows, table by table, whose current version was written by a transaction that began in [from, to). */
async function rowsWrittenBetween(db, fromXid, toXid) {
  const tables = (await db.query(`SELECT quote_ident(c.relname) AS name FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace ORDER BY 1`)).rows.map((r) => r.name);
  // xmin is the 32-bit transaction id; the window never spans 2^32 transactions, but may wrap once.
  const from = Number(fromXid % XID_SPAN);
  const to = Number(toXid % XID_SPAN);
  const inWindow = from <= to ? 'xmin::text::bigint >= $1 AND xmin::text::bigint < $2' : '(xmin::text::bigint >= $1 OR xmin::text::bigint < $2)';
  const byTable = {};
  for (const table of tables) {
    const n = (await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${inWindow}`, [from, to])).rows[0].n;
    if (n > 0) byTable[table] = n;
  }
  return byTable;
}

/**
 * A probe that resolves once a new session's first event (its `agent.session.created`) is on its
 * Redis stream: the api publishes it after commit, reading the outbox row back (two statements),
 * and may answer the POST first; the count of a fork waits for it so that those statements are
 * counted with their fork, not the next. Bounded: 200 reads 10 ms apart. `close()` when done.
 */
export function streamPublished(redisUrl) {
  const redis = new Redis(redisUrl, { connectionName: 'yuxi-fork-cost', maxRetriesPerRequest: 1 });
  const probe = async (sessionId) => {
    for (let attempt = 0; attempt < 200; attempt += 1) {
      // The stream key of one Redis server (libs/events stream-keys.ts); the bench and budget stacks run one.
      if ((await redis.xlen(`yuxi:session-events:{${sessionId}}`)) > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`the created event of ${sessionId} was not published`);
  };
  probe.close = () => redis.disconnect();
  return probe;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/**
 * `count` forks made one at a time by `forkOnce(i)` (it returns the POST's `{ status, body }`),
 * each counted on its own, once `settled(forkId)` resolves (the work the api does after answering):
 * latency, statements, rows written (table by table). Background work of the stack (a key's
 * last-used time, once a minute) may land in one sample: the median is the cost.
 */
export async function measureForks(db, forkOnce, count, { settled = async () => undefined } = {}) {
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const samples = [];
  for (let i = 0; i < count; i += 1) {
    const before = await countSnapshot(db);
    const started = performance.now();
    const fork = await forkOnce(i);
    const ms = performance.now() - started;
    if (fork.status !== 201) throw new Error(`fork: ${fork.status} ${JSON.stringify(fork.body)}`);
    await settled(fork.body.id);
    const after = await countSnapshot(db);
    const statements = statementsBetween(before, after);
    const rowsByTable = await rowsWrittenBetween(db, before.nextXid, after.nextXid);
    samples.push({
      id: fork.body.id,
      ms,
      statements: statements.reduce((total, s) => total + s.calls, 0),
      statementList: statements,
      rows: Object.values(rowsByTable).reduce((total, n) => total + n, 0),
      rowsByTable,
      transactions: Number(after.nextXid - before.nextXid),
    });
  }
  const typical = samples.find((s) => s.statements === median(samples.map((x) => x.statements)) && s.rows === median(samples.map((x) => x.rows))) ?? samples[0];
  return {
    forks: count,
    fork_ids: samples.map((s) => s.id),
    latency_ms: summarize(samples.map((s) => s.ms)),
    statements_per_fork: median(samples.map((s) => s.statements)),
    rows_per_fork: median(samples.map((s) => s.rows)),
    transactions_per_fork: median(samples.map((s) => s.transactions)),
    statements_range: [Math.min(...samples.map((s) => s.statements)), Math.max(...samples.map((s) => s.statements))],
    rows_range: [Math.min(...samples.map((s) => s.rows)), Math.max(...samples.map((s) => s.rows))],
    rows_by_table: typical.rowsByTable,
    statements: typical.statementList,
  };
}

/**
 * SQL statements per echo turn on some sessions (forks, or sources): `turns` follow-ups one at a
 * time, round robin over the sessions (as bench/lib/budget.mjs does: a follow-up sent the moment
 * the previous turn of the same session is announced may find it not yet released, and queue),
 * after one warm-up turn each, each waited for on the session's open stream. The lineage must not
 * cost a fork's turn anything (the context stays one statement).
 */
export async function statementsPerTurn(db, client, sessionIds, turns) {
  const open = sessionIds.map((id) => ({ id, source: client.subscribe(id) }));
  try {
    await Promise.all(open.map((s) => opened(s.source)));
    const turn = async ({ id, source }, text) => {
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await client.send(id, text);
      await completed;
    };
    for (const s of open) await turn(s, 'warm-up');
    const before = await countSnapshot(db);
    for (let i = 0; i < turns; i += 1) await turn(open[i % open.length], `turn ${i}`);
    const after = await countSnapshot(db);
    const statements = statementsBetween(before, after).map((s) => ({ per_turn: round(s.calls / turns, 3), query: s.query }));
    return { per_turn: round(statements.reduce((total, s) => total + s.per_turn, 0), 2), statements };
  } finally {
    for (const s of open) s.source.close();
  }
}

export function forkScenarios({ stack, client, log }) {
  return { fork };

  async function get(path) {
    const res = await fetch(`${client.api}${path}`, { headers: client.headers() });
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  }

  /** `samples` reads of each page, source and fork alternating (the same machine noise for both). */
  async function pageLatency(sourceId, forkId, query, samples) {
    const times = { source: [], fork: [] };
    for (let i = 0; i < samples; i += 1) {
      for (const [which, id] of [['source', sourceId], ['fork', forkId]]) {
        const started = performance.now();
        await get(`/sessions/${id}/items?${query}`);
        times[which].push(performance.now() - started);
      }
    }
    const source = summarize(times.source);
    const fork = summarize(times.fork);
    return { query, source, fork, ratio_p50: round(fork.p50 / source.p50), ratio_p99: round(fork.p99 / source.p99) };
  }

  /**
   * Sources of each size; `forksPerSize` forks of each (after its latest turn, so the fork inherits
   * everything), counted one by one; then items pages of the fork of the largest source against the
   * source (first page desc, and a deep page through a cursor in the middle of the history, asc), and
   * the first page of a fork four deep (a fork of a fork…, each after a turn of its own).
   */
  async function fork({ sizes = [10, 1000, 10_000], forksPerSize = 50, pageSamples = 200 } = {}) {
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    const settled = streamPublished(stack.env.REDIS_URL);
    try {
      const bySize = [];
      for (const size of sizes) {
        log(`fork: seeding a session of ${size} items…`);
        const seedStarted = performance.now();
        const source = await seedSession(client, size);
        const seedS = round((performance.now() - seedStarted) / 1000, 1);
        // Warm-up: the first fork prepares statements and fills the api's caches.
        await forkSession(client, source.id);
        log(`fork: ${forksPerSize} forks of the ${size}-item session…`);
        const cost = await measureForks(db, () => forkSession(client, source.id), forksPerSize, { settled });
        const copied = await ownItems(db, cost.fork_ids[0]);
        bySize.push({ items: size, source_id: source.id, seed_s: seedS, items_copied: copied, ...cost, fork_ids: undefined });
      }
      const flat = bySize.every((s) => s.statements_per_fork === bySize[0].statements_per_fork && s.rows_per_fork === bySize[0].rows_per_fork && s.items_copied === 0);

      const largest = bySize.at(-1);
      const forkOfLargest = (await forkSession(client, largest.source_id)).body.id;
      const middle = await itemAt(largest.source_id, Math.floor(largest.items / 2));
      log('fork: items pages of the fork against its source…');
      const pages = [];
      for (const limit of [20, 100]) {
        pages.push({ page: `first page desc, ${limit}`, ...(await pageLatency(largest.source_id, forkOfLargest, `order=desc&limit=${limit}`, pageSamples)) });
        pages.push({ page: `deep cursor asc (item ${Math.floor(largest.items / 2)}), ${limit}`, ...(await pageLatency(largest.source_id, forkOfLargest, `order=asc&limit=${limit}&after=${middle}`, pageSamples)) });
      }
      // A fork four deep: each link forks after a turn of its own (an inherited point would not add depth).
      let deep = forkOfLargest;
      for (let depth = 2; depth <= 4; depth += 1) {
        await seedSessionTurn(deep);
        deep = (await forkSession(client, deep)).body.id;
      }
      pages.push({ page: 'first page desc, 20, a fork 4 deep', ...(await pageLatency(largest.source_id, deep, 'order=desc&limit=20', pageSamples)) });

      const report = {
        description: `sources of ${sizes.join(', ')} items made through the API; ${forksPerSize} forks of each after its latest turn, one at a time, each counted on its own (pg_stat_statements call deltas; rows whose xmin is a transaction of the window, table by table; the median fork); then ${pageSamples} reads of each items page of the fork of the ${largest.items}-item source and of the source, alternating`,
        by_size: bySize,
        pages,
        target: 'statements and rows per fork equal for every size, nothing copied; fork pages p50 within 25 % of the source\u2019s at depth 1',
        met: flat && pages.filter((p) => !p.page.includes('4 deep')).every((p) => p.ratio_p50 <= 1.25),
      };
      printTable(report);
      return report;
    } finally {
      settled.close();
      await db.end();
    }
  }

  /** The id of the item at `position` (0-based, oldest first) of a session: walked a page of 100 at a time. */
  async function itemAt(sessionId, position) {
    let after = '';
    for (let seen = 0; ; seen += 100) {
      const page = await get(`/sessions/${sessionId}/items?order=asc&limit=100${after ? `&after=${after}` : ''}`);
      if (position < seen + page.data.length) return page.data[position - seen].id;
      if (!page.has_more) throw new Error(`no item ${position} in ${sessionId}`);
      after = page.last_id;
    }
  }

  /** One echo turn on a session (waits for its end on the stream). */
  async function seedSessionTurn(sessionId) {
    const source = client.subscribe(sessionId);
    await opened(source);
    try {
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await client.send(sessionId, 'a turn of its own');
      await completed;
    } finally {
      source.close();
    }
  }

  function printTable(report) {
    const lines = ['fork cost by source size:', '| items | fork p50 / p99 ms | statements | rows (by table) | write transactions | items copied |', '|---|---|---|---|---|---|'];
    for (const s of report.by_size) {
      const tables = Object.entries(s.rows_by_table).map(([t, n]) => `${t} ${n}`).join(', ');
      lines.push(`| ${s.items} | ${s.latency_ms.p50} / ${s.latency_ms.p99} | ${s.statements_per_fork} (${s.statements_range.join('–')}) | ${s.rows_per_fork} (${tables}) | ${s.transactions_per_fork} | ${s.items_copied} |`);
    }
    lines.push('', 'items pages, fork vs source:', '| page | source p50 / p99 ms | fork p50 / p99 ms | ratio p50 / p99 |', '|---|---|---|---|');
    for (const p of report.pages) lines.push(`| ${p.page} | ${p.source.p50} / ${p.source.p99} | ${p.fork.p50} / ${p.fork.p99} | ${p.ratio_p50} / ${p.ratio_p99} |`);
    log(lines.join('\n'));
  }
}
