// The bench's storage scenario (`npm run bench -- storage`, issue 43 "Growth as a number"): what a
// turn leaves behind in Postgres and Redis, table by table and index by index, and what is still
// there once its sessions are deleted. Measurement only: the scenario drives the stack through the
// public API (echo turns, tool turns through the fake OpenAI server, manual compactions), lets what
// only resume needs age out (`ageOut`: the outbox past the replay window) and measures the live
// sessions again, then deletes the sessions, runs the purges it is given (bench/run.mjs passes the deleted_sessions
// retention: deletedSessionsPurge) and a plain VACUUM, and reports what is left against the baseline.
//
// Two measures of Postgres, both reported, because each misses something the other sees:
// - relation sizes (pg_table_size, pg_indexes_size, per index pg_relation_size) after
//   `VACUUM (ANALYZE)`: what the disk holds, indexes and TOAST included, but page-granular (8 KiB),
//   so a table that grows by a few rows moves by 0 or 8,192 bytes;
// - row bytes: per row, the sum of pg_column_size over its columns plus a 24-byte tuple header, over
//   the rows whose current version was written by a transaction of the window (xmin, as
//   bench/lib/fork-scenarios.mjs counts rows): exact and not page-rounded (each value as stored,
//   compressed where Postgres compressed it, a TOASTed one at its stored size without fetching it;
//   not pg_column_size(t.*), which rebuilds the row with its TOASTed values fetched and decompressed),
//   but without indexes, page and line-pointer overhead, padding or dead versions.
// Redis: INFO memory used_memory, DBSIZE, and keys grouped by pattern (ids replaced by `*`) through
// a bounded SCAN, with MEMORY USAGE of a bounded number of keys per pattern.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { nextEvent, opened } from './client.mjs';
import { round } from './measure.mjs';
import { storageTables } from './storage-report.mjs';

const XID_SPAN = 2n ** 32n;
/** The tables that hold what users keep: the conversation. Everything else serves delivery, resume, idempotency or operations. */
export const CONVERSATION_TABLES = ['items'];
/** The target once what only resume and delivery need has aged out. */
export const TARGET_BYTES_PER_ECHO_TURN = 4096;

// ---------------------------------------------------------------- pure helpers (test/unit/storage-bench.test.ts)

/**
 * A Redis key with its ids replaced by `*`, so keys of one kind count together: hash tags
 * (`{…}`), uuids, numbers and long opaque tokens. `yuxi:session-events:{<uuid>}` →
 * `yuxi:session-events:*`, `bull:session-dispatch:42` → `bull:session-dispatch:*`.
 */
export function keyPattern(key) {
  return key
    .split(':')
    .map((part) => {
      if (/^\{.*\}$/.test(part)) return '*';
      if (/^\d+$/.test(part)) return '*';
      if (/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i.test(part)) return '*';
      if (part.length >= 20 && /^[A-Za-z0-9_-]+$/.test(part) && /\d/.test(part)) return '*';
      return part;
    })
    .join(':');
}

/**
 * Two relation-size snapshots → growth per table and per index (bytes and bytes per turn), the
 * largest first; tables and indexes that did not move are left out.
 */
export function sizeGrowth(before, after, turns) {
  const perTurn = (bytes) => (turns > 0 ? round(bytes / turns, 1) : null);
  const beforeTables = new Map(before.tables.map((t) => [t.table, t]));
  const tables = [];
  for (const t of after.tables) {
    const b = beforeTables.get(t.table) ?? { table_bytes: 0, index_bytes: 0, total_bytes: 0 };
    const growth = { table: t.table, table_bytes: t.table_bytes - b.table_bytes, index_bytes: t.index_bytes - b.index_bytes, total_bytes: t.total_bytes - b.total_bytes };
    if (growth.total_bytes === 0 && growth.table_bytes === 0 && growth.index_bytes === 0) continue;
    tables.push({ ...growth, total_per_turn: perTurn(growth.total_bytes), table_per_turn: perTurn(growth.table_bytes), index_per_turn: perTurn(growth.index_bytes) });
  }
  tables.sort((a, b) => b.total_bytes - a.total_bytes);
  const beforeIndexes = new Map(before.indexes.map((i) => [i.index, i.bytes]));
  const indexes = after.indexes
    .map((i) => ({ index: i.index, table: i.table, bytes: i.bytes - (beforeIndexes.get(i.index) ?? 0) }))
    .filter((i) => i.bytes !== 0)
    .map((i) => ({ ...i, per_turn: perTurn(i.bytes) }))
    .sort((a, b) => b.bytes - a.bytes);
  const total = tables.reduce((sum, t) => sum + t.total_bytes, 0);
  const conversation = tables.filter((t) => CONVERSATION_TABLES.includes(t.table)).reduce((sum, t) => sum + t.total_bytes, 0);
  return {
    total_bytes: total,
    per_turn: perTurn(total),
    database_bytes: after.database_bytes - before.database_bytes,
    conversation_bytes: conversation,
    conversation_share: total > 0 ? round(conversation / total, 3) : null,
    by_table: tables,
    by_index: indexes,
  };
}

/** Exact row bytes of a window (`{ table: { rows, bytes } }`) → per table and per turn, the largest first. */
export function rowGrowth(byTable, turns) {
  const perTurn = (bytes) => (turns > 0 ? round(bytes / turns, 1) : null);
  const tables = Object.entries(byTable)
    .filter(([, t]) => t.rows > 0)
    .map(([table, t]) => ({ table, rows: t.rows, bytes: t.bytes, rows_per_turn: turns > 0 ? round(t.rows / turns, 2) : null, bytes_per_turn: perTurn(t.bytes) }))
    .sort((a, b) => b.bytes - a.bytes);
  const total = tables.reduce((sum, t) => sum + t.bytes, 0);
  const conversation = tables.filter((t) => CONVERSATION_TABLES.includes(t.table)).reduce((sum, t) => sum + t.bytes, 0);
  return {
    rows: tables.reduce((sum, t) => sum + t.rows, 0),
    bytes: total,
    per_turn: perTurn(total),
    conversation_bytes: conversation,
    conversation_share: total > 0 ? round(conversation / total, 3) : null,
    // Bytes kept for each byte of conversation (the "sixteen bytes kept for every byte").
    bytes_per_conversation_byte: conversation > 0 ? round(total / conversation, 2) : null,
    by_table: tables,
  };
}

/** Two Redis snapshots → memory, keys and keys by pattern (count and estimated bytes), per turn. */
export function redisGrowth(before, after, turns) {
  const perTurn = (n) => (turns > 0 ? round(n / turns, 2) : null);
  const patterns = new Set([...Object.keys(before.patterns), ...Object.keys(after.patterns)]);
  const byPattern = [];
  for (const pattern of patterns) {
    const b = before.patterns[pattern] ?? { keys: 0, bytes: 0 };
    const a = after.patterns[pattern] ?? { keys: 0, bytes: 0 };
    if (a.keys === b.keys && a.bytes === b.bytes) continue;
    byPattern.push({ pattern, keys: a.keys - b.keys, bytes: a.bytes - b.bytes, keys_after: a.keys, keys_per_turn: perTurn(a.keys - b.keys), bytes_per_turn: perTurn(a.bytes - b.bytes) });
  }
  byPattern.sort((x, y) => Math.abs(y.bytes) - Math.abs(x.bytes));
  return {
    used_memory_bytes: after.used_memory - before.used_memory,
    used_memory_per_turn: perTurn(after.used_memory - before.used_memory),
    keys: after.dbsize - before.dbsize,
    keys_per_turn: perTurn(after.dbsize - before.dbsize),
    keys_after: after.dbsize,
    scan_complete: before.scan_complete && after.scan_complete,
    by_pattern: byPattern,
  };
}

// ---------------------------------------------------------------- snapshots

/** `VACUUM (ANALYZE)`, then the size of every table and index of the schema, and the next transaction id. */
export async function pgSizes(db) {
  // Plain VACUUM: dead versions become free space (reused, not returned to the disk unless at a
  // table's end) and the sizes below are what a table holds, not what it churned through.
  await db.query('VACUUM (ANALYZE)');
  const tables = (
    await db.query(
      `SELECT c.relname AS table, pg_table_size(c.oid)::bigint AS table_bytes, pg_indexes_size(c.oid)::bigint AS index_bytes,
              pg_total_relation_size(c.oid)::bigint AS total_bytes
         FROM pg_class c WHERE c.relkind IN ('r', 'p') AND c.relnamespace = current_schema()::regnamespace`,
    )
  ).rows.map((r) => ({ table: r.table, table_bytes: Number(r.table_bytes), index_bytes: Number(r.index_bytes), total_bytes: Number(r.total_bytes) }));
  const indexes = (
    await db.query(
      `SELECT i.relname AS index, t.relname AS table, pg_relation_size(i.oid)::bigint AS bytes
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
        WHERE t.relnamespace = current_schema()::regnamespace`,
    )
  ).rows.map((r) => ({ index: r.index, table: r.table, bytes: Number(r.bytes) }));
  const { rows } = await db.query('SELECT pg_database_size(current_database())::bigint AS db, pg_snapshot_xmax(pg_current_snapshot())::text AS next_xid');
  return { tables, indexes, database_bytes: Number(rows[0].db), nextXid: BigInt(rows[0].next_xid) };
}

/** Rows and their stored bytes (columns' pg_column_size and a tuple header), table by table, whose current version a transaction begun in [from, to) wrote. */
async function rowsWrittenBetween(db, fromXid, toXid) {
  const tables = (
    await db.query(
      `SELECT quote_ident(c.relname) AS name, c.relname AS table,
         (SELECT string_agg(format('coalesce(pg_column_size(t.%I), 0)', a.attname), ' + ' ORDER BY a.attnum)
            FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
         FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace ORDER BY 1`,
    )
  ).rows;
  // xmin is the 32-bit transaction id; the window never spans 2^32 transactions, but may wrap once.
  const from = Number(fromXid % XID_SPAN);
  const to = Number(toXid % XID_SPAN);
  const inWindow = from <= to ? 'xmin::text::bigint >= $1 AND xmin::text::bigint < $2' : '(xmin::text::bigint >= $1 OR xmin::text::bigint < $2)';
  const byTable = {};
  for (const { name, table, columns } of tables) {
    const { rows } = await db.query(`SELECT count(*)::bigint AS n, coalesce(sum(24 + ${columns ?? '0'}), 0)::bigint AS bytes FROM ${name} t WHERE ${inWindow}`, [from, to]);
    byTable[table] = { rows: Number(rows[0].n), bytes: Number(rows[0].bytes) };
  }
  return byTable;
}

/**
 * used_memory, DBSIZE and keys by pattern. SCAN walks at most `maxKeys` keys (COUNT 1,000 a call);
 * MEMORY USAGE is asked of at most `probesPerPattern` keys of each pattern, the rest estimated at
 * the probed keys' mean (the stack's few thousand keys are all probed).
 */
async function redisSnapshot(redis, { maxKeys = 100_000, probesPerPattern = 2_000 } = {}) {
  const memory = /used_memory:(\d+)/.exec(await redis.info('memory'));
  const dbsize = await redis.dbsize();
  const patterns = {};
  const probes = {};
  let cursor = '0';
  let seen = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const pattern = keyPattern(key);
      patterns[pattern] ??= { keys: 0, bytes: 0, probed: 0 };
      patterns[pattern].keys += 1;
      if (patterns[pattern].probed < probesPerPattern) {
        patterns[pattern].probed += 1;
        (probes[pattern] ??= []).push(key);
      }
    }
    seen += keys.length;
  } while (cursor !== '0' && seen < maxKeys);
  for (const [pattern, keys] of Object.entries(probes)) {
    for (let at = 0; at < keys.length; at += 200) {
      const pipeline = redis.pipeline();
      for (const key of keys.slice(at, at + 200)) pipeline.memory('USAGE', key);
      for (const [error, bytes] of await pipeline.exec()) if (!error && bytes !== null) patterns[pattern].bytes += Number(bytes);
    }
    const p = patterns[pattern];
    if (p.probed < p.keys) p.bytes = Math.round((p.bytes / p.probed) * p.keys);
  }
  return { used_memory: Number(memory?.[1] ?? 0), dbsize, patterns, scan_complete: cursor === '0' };
}

// ---------------------------------------------------------------- the scenario

export function storageScenarios({ stack, client, log, fakeOpenAi }) {
  return { storage };

  /**
   * Baseline; `echoTurns` echo turns over `echoSessions` sessions (a `messageBytes`-byte message
   * each: the measurement); `toolTurns` tool turns (model call 1 asks for the builtin
   * calculator, model call 2 answers) over `toolSessions` sessions; `compactions` sessions of
   * `turnsBeforeCompact` echo turns each, then one `yuxi.session.input.compact` each (the compaction
   * window counts only the compaction turns). Each window is measured on its own (relation sizes
   * after VACUUM (ANALYZE), row bytes, Redis). Then every session is deleted through the API, the
   * `purges` run in order (each `{ name, run: async () => any }`), a plain VACUUM, and what is left
   * is measured against the baseline. Turns run one at a time, each awaited on its SSE stream.
   */
  async function storage({ echoTurns = 400, echoSessions = 20, messageBytes = 70, toolTurns = 100, toolSessions = 5, compactions = 10, turnsBeforeCompact = 10, ageOut = null, purges = [] } = {}) {
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    const redis = new Redis(stack.env.REDIS_URL, { connectionName: 'yuxi-storage-bench', maxRetriesPerRequest: 1 });
    const all = [];
    const open = (ids) => ids.map((id) => ({ id, source: client.subscribe(id) }));
    const close = (lanes) => lanes.forEach((lane) => lane.source.close());
    const turn = async ({ id, source }, send) => {
      const completed = nextEvent(source, 'agent.session.turn.completed');
      await send(id);
      await completed;
    };
    const message = (i) => `storage bench turn ${i} `.padEnd(messageBytes, 'x');
    const snapshot = async () => ({ pg: await pgSizes(db), redis: await redisSnapshot(redis) });
    const measureWindow = async (before, after, turns) => ({
      turns,
      postgres_relations: sizeGrowth(before.pg, after.pg, turns),
      postgres_rows: rowGrowth(await rowsWrittenBetween(db, before.pg.nextXid, after.pg.nextXid), turns),
      redis: redisGrowth(before.redis, after.redis, turns),
    });
    try {
      const started = performance.now();
      const baseline = await snapshot();

      log(`storage: ${echoTurns} echo turns over ${echoSessions} sessions (${messageBytes}-byte messages)…`);
      const echo = open(await createSessions(echoSessions, 'default-chatbot'));
      all.push(...echo.map((lane) => lane.id));
      await Promise.all(echo.map((lane) => opened(lane.source)));
      for (let i = 0; i < echoTurns; i += 1) await turn(echo[i % echo.length], (id) => client.send(id, message(i)));
      close(echo);
      const afterEcho = await snapshot();
      // Each window's rows are read at its end: a later window rewrites some of them (a deletion
      // updates its session), and a row's xmin is that of its latest version.
      const echoWindow = await measureWindow(baseline, afterEcho, echoTurns);

      log(`storage: ${toolTurns} tool turns over ${toolSessions} sessions…`);
      const answer = { text: ['2+2 = ', '4'] };
      fakeOpenAi.script('bench-storage-tool', Array.from({ length: toolTurns }, (_, i) => [{ tool_calls: [{ id: `call_storage_${i}`, name: 'calculator', arguments: '{"expression":"2+2"}' }] }, answer]).flat());
      await client.putAgent('bench-storage-tool', { name: 'Bench storage tool turn', model: 'openai:bench-storage-tool', tools: [{ type: 'builtin', name: 'calculator' }] });
      const tool = open(await createSessions(toolSessions, 'bench-storage-tool'));
      all.push(...tool.map((lane) => lane.id));
      await Promise.all(tool.map((lane) => opened(lane.source)));
      for (let i = 0; i < toolTurns; i += 1) await turn(tool[i % tool.length], (id) => client.send(id, message(i)));
      close(tool);
      const afterTool = await snapshot();
      const toolWindow = await measureWindow(afterEcho, afterTool, toolTurns);

      log(`storage: ${compactions} sessions of ${turnsBeforeCompact} echo turns, then a compaction each…`);
      const compacted = open(await createSessions(compactions, 'default-chatbot'));
      all.push(...compacted.map((lane) => lane.id));
      await Promise.all(compacted.map((lane) => opened(lane.source)));
      for (let i = 0; i < compactions * turnsBeforeCompact; i += 1) await turn(compacted[i % compacted.length], (id) => client.send(id, message(i)));
      const compactBefore = await snapshot();
      for (const lane of compacted) await turn(lane, (id) => submit(id, { type: 'yuxi.session.input.compact' }));
      close(compacted);
      const afterCompact = await snapshot();
      const allTurns = echoTurns + toolTurns + compactions * (turnsBeforeCompact + 1);
      const compactionWindow = await measureWindow(compactBefore, afterCompact, compactions);
      const allWritten = await measureWindow(baseline, afterCompact, allTurns);
      const compactionItems = (await db.query(`SELECT count(*)::int AS n FROM items WHERE session_id = ANY($1) AND type = 'compaction'`, [compacted.map((lane) => lane.id)])).rows[0].n;

      // What the live sessions keep once what only resume needs aged out: all turns' relations, and the
      // echo window's rows still there (exact), receipts (real-time expiry) shown apart.
      let aged = null;
      if (ageOut) {
        log(`storage: ${ageOut.name}…`);
        const result = await ageOut.run({ db, redis, stack, sessionIds: all });
        const echoRows = rowGrowth(await rowsWrittenBetween(db, baseline.pg.nextXid, afterEcho.pg.nextXid), echoTurns);
        const receipts = echoRows.by_table.find((t) => t.table === 'idempotency_receipts')?.bytes_per_turn ?? 0;
        aged = { name: ageOut.name, result, all_turns: await measureWindow(baseline, await snapshot(), allTurns), echo_rows: echoRows, echo_rows_per_turn_without_receipts: round(echoRows.per_turn - receipts, 1) };
      }
      log(`storage: deleting ${all.length} sessions through the API…`);
      for (const id of all) await client.deleteSession(id);
      // The outbox relay (every 500 ms) publishes the deletions' events; let it, then measure.
      await sleep(2_000);
      const afterDelete = await snapshot();
      const deletionWindow = { ...(await measureWindow(afterCompact, afterDelete, all.length)), per: 'deleted session' };
      const purgeResults = [];
      for (const purge of purges) {
        log(`storage: purge ${purge.name}…`);
        purgeResults.push({ name: purge.name, result: (await purge.run({ db, redis, stack, sessionIds: all })) ?? null });
      }
      const afterPurge = purges.length > 0 ? await snapshot() : afterDelete;

      const report = {
        description: `baseline; ${echoTurns} echo turns over ${echoSessions} sessions (${messageBytes}-byte messages, scripted:echo); ${toolTurns} tool turns over ${toolSessions} sessions (openai: model on the fake server, builtin calculator: two model calls); ${compactions} sessions of ${turnsBeforeCompact} echo turns then one yuxi.session.input.compact each; every turn one at a time, awaited on its SSE stream. Each window: relation sizes after VACUUM (ANALYZE) (page-granular), per row the columns' pg_column_size and a 24-byte header, of the rows a transaction of the window wrote (exact, TOASTed values at their stored size), Redis used_memory, DBSIZE and keys by pattern. Then the ${all.length} sessions deleted through the API, the purges run (${purges.length === 0 ? 'none exist yet' : purges.map((p) => p.name).join(', ')}), VACUUM, and what is left against the baseline`,
        config: { echo_turns: echoTurns, echo_sessions: echoSessions, message_bytes: messageBytes, tool_turns: toolTurns, tool_sessions: toolSessions, compacted_sessions: compactions, turns_before_compact: turnsBeforeCompact, model_request_audit: stack.env.MODEL_REQUEST_AUDIT ?? 'default' },
        echo: echoWindow,
        tool: toolWindow,
        compaction: { ...compactionWindow, compaction_items: compactionItems },
        all_written: allWritten,
        aged,
        deletion: deletionWindow,
        purges: purgeResults,
        // What the run left, against the baseline: relations (after a plain VACUUM) and the rows
        // written since the baseline that are still there. With no purge, nearly everything.
        left: await measureWindow(baseline, afterPurge, allTurns),
        wall_s: round((performance.now() - started) / 1000, 1),
        target: `≤ ${TARGET_BYTES_PER_ECHO_TURN} bytes retained per echo turn once what only resume and delivery need has aged out, the items the largest share (issue 43)`,
      };
      report.left.share_of_growth_left = report.all_written.postgres_relations.total_bytes > 0 ? round(report.left.postgres_relations.total_bytes / report.all_written.postgres_relations.total_bytes, 3) : null;
      report.left.share_of_row_bytes_left = report.all_written.postgres_rows.bytes > 0 ? round(report.left.postgres_rows.bytes / report.all_written.postgres_rows.bytes, 3) : null;
      // The target is of live sessions, once their outbox aged out: met when the echo window's rows
      // still there (exact; receipts left out: they expire by real time) are at most the target per
      // turn and the items are the largest table among them. Relation sizes are reported beside it:
      // a plain VACUUM keeps the freed pages for reuse, so they fall only in a steady state (the soak).
      if (report.aged) {
        const rel = report.aged.all_turns.postgres_relations;
        const receipts = rel.by_table.find((t) => t.table === 'idempotency_receipts')?.total_per_turn ?? 0;
        report.aged.relations_per_turn_without_receipts = round(rel.per_turn - receipts, 1);
        const kept = report.aged.echo_rows.by_table.filter((t) => t.table !== 'idempotency_receipts');
        report.aged.largest_table = kept[0]?.table ?? null;
      }
      report.met = report.aged !== null && report.aged.echo_rows_per_turn_without_receipts <= TARGET_BYTES_PER_ECHO_TURN && report.aged.largest_table === 'items';
      report.left_per_turn_after_purges = purges.length > 0 ? round(report.left.postgres_relations.total_bytes / allTurns, 1) : null;
      log(storageTables(report));
      return report;
    } finally {
      redis.disconnect();
      await db.end();
    }
  }

  async function createSessions(n, agentId) {
    const ids = [];
    for (let i = 0; i < n; i += 1) ids.push((await client.createSession(undefined, agentId)).id);
    return ids;
  }

  async function submit(sessionId, event) {
    const res = await fetch(`${client.api}/sessions/${sessionId}/events`, {
      method: 'POST',
      headers: client.headers({ 'idempotency-key': randomUUID() }),
      body: JSON.stringify({ events: [event] }),
    });
    if (res.status !== 202) throw new Error(`submit ${event.type}: ${res.status} ${await res.text()}`);
  }
}
