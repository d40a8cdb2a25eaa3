// The bench's soak (`npm run bench -- soak`, issue 43's "Soak: 20,000 turns over 2,000 sessions with
// deletions, on this machine: table sizes return near the baseline after purge and vacuum; no
// unbounded Redis key"). Never part of a plain `npm run bench` (bench/run.mjs runs it only when
// named): at full size it takes the machine for a long while.
//
// Sessions are driven by a bounded pool (`concurrency` lanes): each lane creates a session, opens
// its SSE stream, runs its turns one at a time (each awaited on `agent.session.turn.completed`),
// closes the stream and deletes the session through the API, then takes the next session; so
// deletions interleave with other lanes' live turns all run long. Then the deleted sessions are
// purged (the purge bench/run.mjs passes: the lifecycle clock moved past SESSION_PURGE_AFTER_S),
// a plain VACUUM, and the relation sizes and Redis are compared with the baseline and the peak.
// Measurement helpers are the storage scenario's (bench/lib/storage-scenarios.mjs).
import { Redis } from 'ioredis';
import pg from 'pg';
import { nextEvent, opened } from './client.mjs';
import { round } from './measure.mjs';
import { keyPattern, pgSizes } from './storage-scenarios.mjs';

/** Soak size from the environment (defaults: the issue's 20,000 turns over 2,000 sessions, 4 lanes, one round). */
export function soakOptions(env = process.env) {
  const int = (name, fallback, min) => {
    const n = Math.floor(Number(env[name] ?? fallback));
    return Number.isFinite(n) ? Math.max(min, n) : fallback;
  };
  return {
    turns: int('BENCH_SOAK_TURNS', 20_000, 1),
    sessions: int('BENCH_SOAK_SESSIONS', 2_000, 1),
    concurrency: int('BENCH_SOAK_CONCURRENCY', 4, 1),
    marginPct: int('BENCH_SOAK_MARGIN_PCT', 10, 0),
    rounds: int('BENCH_SOAK_ROUNDS', 1, 1),
  };
}

// ---------------------------------------------------------------- pure helpers (test/unit/soak-bench.test.ts)

/** Turns of session `index` when `turns` are spread over `sessions` (the first ones take the remainder). */
export function turnsOfSession(index, turns, sessions) {
  return Math.floor(turns / sessions) + (index < turns % sessions ? 1 : 0);
}

/**
 * Relation sizes (pgSizes, with `rows`: live rows by table) at baseline, peak and after the purge →
 * totals and the `top` tables by peak size, each with its three sizes and live rows; `left` lists
 * the tables still above their baseline (rows left there are kept data; bytes without rows, free
 * space that plain VACUUM keeps for reuse, indexes above all).
 */
export function relationTable(baseline, peak, after, top = 12) {
  const size = (snap) => new Map(snap.tables.map((t) => [t.table, t.total_bytes]));
  const [b, p, a] = [size(baseline), size(peak), size(after)];
  const names = [...new Set([...b.keys(), ...p.keys(), ...a.keys()])];
  const live = (snap, table) => snap.rows?.[table] ?? 0;
  const rows = names.map((table) => ({
    table,
    baseline: b.get(table) ?? 0,
    peak: p.get(table) ?? 0,
    after_purge: a.get(table) ?? 0,
    rows: { baseline: live(baseline, table), peak: live(peak, table), after_purge: live(after, table) },
  }));
  const total = (key) => rows.reduce((sum, r) => sum + r[key], 0);
  return {
    total: { baseline: total('baseline'), peak: total('peak'), after_purge: total('after_purge') },
    by_table: [...rows].sort((x, y) => y.peak - x.peak).slice(0, top),
    left: rows.filter((r) => r.after_purge > r.baseline).map((r) => ({ table: r.table, above_baseline: r.after_purge - r.baseline, rows_above_baseline: r.rows.after_purge - r.rows.baseline })).sort((x, y) => y.above_baseline - x.above_baseline),
  };
}

/**
 * Redis key probes (redisKeys) at baseline, at checkpoints during the run (the last one the peak)
 * and after the purge → per pattern, the largest keys at peak, and what is unbounded:
 * - a pattern whose keys without a TTL are, after the purge, at least `max(10, 1 % of sessions)`
 *   more than at baseline (one kept key per session or turn, never expiring);
 * - a key without a TTL whose length (entries, members, fields or bytes) grew by at least
 *   `max(20, 1 % of turns)` over the run and was still growing over its last checkpoint interval,
 *   unless a cap is known for it (`caps`: BullMQ's events stream MAXLEN) and it stays within it.
 * A key that expires is bounded by its TTL (the pattern says the longest TTL seen).
 */
export function redisVerdicts({ baseline, checkpoints, after, turns, sessions, caps = {}, top = 10 }) {
  const peak = checkpoints.at(-1);
  const beforePeak = checkpoints.length > 1 ? checkpoints.at(-2) : baseline;
  const byPattern = (snap) => {
    const out = {};
    for (const k of Object.values(snap.keys)) {
      const p = (out[k.pattern] ??= { keys: 0, no_ttl: 0, bytes: 0, max_ttl_s: 0 });
      p.keys += 1;
      p.bytes += k.bytes;
      if (k.ttl_ms < 0) p.no_ttl += 1;
      else p.max_ttl_s = Math.max(p.max_ttl_s, Math.round(k.ttl_ms / 1000));
    }
    return out;
  };
  const [pb, pp, pa] = [byPattern(baseline), byPattern(peak), byPattern(after)];
  const keyMin = Math.max(10, Math.ceil(sessions / 100));
  const patterns = [...new Set([...Object.keys(pb), ...Object.keys(pp), ...Object.keys(pa)])].map((pattern) => {
    const zero = { keys: 0, no_ttl: 0, bytes: 0, max_ttl_s: 0 };
    const [b, p, a] = [pb[pattern] ?? zero, pp[pattern] ?? zero, pa[pattern] ?? zero];
    const ttl = p.keys === 0 ? 'none at peak' : p.no_ttl === 0 ? `every key expires (≤ ${p.max_ttl_s} s)` : p.no_ttl === p.keys ? 'no TTL' : `${p.no_ttl} of ${p.keys} keys without TTL`;
    return { pattern, keys: { baseline: b.keys, peak: p.keys, after_purge: a.keys }, bytes: { baseline: b.bytes, peak: p.bytes, after_purge: a.bytes }, ttl, unbounded: a.no_ttl - b.no_ttl >= keyMin };
  });
  patterns.sort((x, y) => y.bytes.peak - x.bytes.peak);
  const lengthMin = Math.max(20, Math.ceil(turns / 100));
  const keys = Object.entries(peak.keys).map(([key, k]) => {
    const grew = k.length - (baseline.keys[key]?.length ?? 0);
    const stillGrowing = k.length > (beforePeak.keys[key]?.length ?? 0);
    const cap = caps[key];
    const unbounded = k.ttl_ms < 0 && grew >= lengthMin && stillGrowing && !(cap !== undefined && k.length <= cap);
    return { key, pattern: k.pattern, type: k.type, length: k.length, bytes: k.bytes, ttl_s: k.ttl_ms < 0 ? null : Math.round(k.ttl_ms / 1000), grew, cap: cap ?? null, unbounded };
  });
  const largest = [...keys].sort((x, y) => y.bytes - x.bytes).slice(0, top);
  const unbounded = [
    ...patterns.filter((p) => p.unbounded).map((p) => ({ pattern: p.pattern, why: `${p.keys.after_purge - p.keys.baseline} more keys without TTL after the purge than at baseline` })),
    ...keys.filter((k) => k.unbounded).map((k) => ({ key: k.key, why: `${k.type} grew by ${k.grew} (to ${k.length}) without TTL${k.cap === null ? ', no cap known' : `, past its cap ${k.cap}`}, still growing at the end` })),
  ];
  return { by_pattern: patterns, largest_keys: largest, unbounded };
}

/**
 * Whether later rounds use again the space earlier ones freed: from round 2's peak to the last
 * round's, the relations grow per turn at most 10 % of what round 1 grew per turn from the
 * baseline. Round 2 is the reference, not round 1: index pages a VACUUM deletes are recycled only
 * from the next VACUUM on, so round 2 still grows. Null with fewer than 3 rounds.
 */
export function spaceReused(baselineBytes, peaks, turns) {
  if (peaks.length < 3) return null;
  const first = (peaks[0] - baselineBytes) / turns;
  const later = (peaks.at(-1) - peaks[1]) / (turns * (peaks.length - 2));
  return { first_round_bytes_per_turn: round(first, 1), later_rounds_bytes_per_turn: round(later, 1), reused: later <= first * 0.1 };
}

// ---------------------------------------------------------------- Redis probes

const LENGTH = { stream: 'xlen', list: 'llen', zset: 'zcard', hash: 'hlen', set: 'scard', string: 'strlen' };

/** Every key (SCAN, at most `maxKeys`) with its pattern, type, TTL (ms, −1 none), MEMORY USAGE and length. */
async function redisKeys(redis, maxKeys = 200_000) {
  const names = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    names.push(...batch);
  } while (cursor !== '0' && names.length < maxKeys);
  const keys = {};
  for (let at = 0; at < names.length; at += 200) {
    const slice = names.slice(at, at + 200);
    const first = redis.pipeline();
    for (const key of slice) first.type(key).pttl(key).memory('USAGE', key);
    const answers = await first.exec();
    const second = redis.pipeline();
    slice.forEach((key, i) => {
      const type = answers[i * 3][1];
      keys[key] = { pattern: keyPattern(key), type, ttl_ms: Number(answers[i * 3 + 1][1]), bytes: Number(answers[i * 3 + 2][1] ?? 0), length: 0 };
      second[LENGTH[type] ?? 'exists'](key);
    });
    (await second.exec()).forEach(([error, length], i) => {
      if (!error) keys[slice[i]].length = Number(length);
    });
  }
  const memory = /used_memory:(\d+)/.exec(await redis.info('memory'));
  return { used_memory: Number(memory?.[1] ?? 0), dbsize: await redis.dbsize(), keys, scan_complete: cursor === '0' };
}

/** BullMQ keeps each queue's events stream at `opts.maxLenEvents` (its meta hash): the known caps, by key. */
async function bullCaps(redis, keys) {
  const caps = {};
  for (const key of Object.keys(keys).filter((k) => k.endsWith(':meta'))) {
    if (keys[key].type !== 'hash') continue;
    const maxLen = await redis.hget(key, 'opts.maxLenEvents');
    if (maxLen !== null) caps[`${key.slice(0, -':meta'.length)}:events`] = Number(maxLen);
  }
  return caps;
}

// ---------------------------------------------------------------- the scenario

/** Relation sizes (pgSizes: after VACUUM (ANALYZE)) with each table's live rows (pg_class.reltuples, which that VACUUM set). */
async function pgSnapshot(db) {
  const sizes = await pgSizes(db);
  const { rows } = await db.query(`SELECT relname AS table, greatest(reltuples, 0)::bigint AS n FROM pg_class WHERE relkind IN ('r', 'p') AND relnamespace = current_schema()::regnamespace`);
  return { ...sizes, rows: Object.fromEntries(rows.map((r) => [r.table, Number(r.n)])) };
}

export function soakScenarios({ stack, client, log }) {
  return { soak };

  /**
   * The soak (see the file's head), `rounds` times over on the same stack: from 3 rounds on, the
   * report says whether later rounds use again the space earlier ones freed (spaceReused).
   * `purge` is `{ name, run }`, as the storage scenario's purges.
   */
  async function soak({ turns, sessions, concurrency, marginPct, rounds = 1, messageBytes = 70, purge }) {
    const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
    await db.connect();
    const redis = new Redis(stack.env.REDIS_URL, { connectionName: 'yuxi-soak-bench', maxRetriesPerRequest: 1 });
    try {
      const started = performance.now();
      const baseline = { pg: await pgSnapshot(db), redis: await redisKeys(redis) };
      const done = [];
      for (let round_ = 1; round_ <= rounds; round_ += 1) {
        log(`soak round ${round_}/${rounds}: ${turns} turns over ${sessions} sessions, ${concurrency} lanes, each session deleted after its turns…`);
        const run = await drive({ turns, sessions, concurrency, messageBytes });
        // The outbox relay (every 500 ms) publishes the last deletions' events; then the peak.
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        const peak = { pg: await pgSnapshot(db), redis: { sessions_done: sessions, ...(await redisKeys(redis)) } };
        run.checkpoints.push(peak.redis);
        log(`soak round ${round_}: purge ${purge.name}…`);
        const purged = await purge.run({ db, redis, stack, sessionIds: run.ids });
        // pgSnapshot runs VACUUM (ANALYZE): a plain VACUUM, never FULL (what a deployment's autovacuum does).
        const after = { pg: await pgSnapshot(db), redis: await redisKeys(redis) };
        const left = (await db.query(`SELECT count(*)::int AS n FROM sessions WHERE id = ANY($1::uuid[])`, [run.ids])).rows[0].n;
        done.push({ run, peak, after, purged, left });
      }
      const last = done.at(-1);
      const relations = relationTable(baseline.pg, last.peak.pg, last.after.pg);
      const margin = Math.round((relations.total.baseline * marginPct) / 100);
      const verdicts = redisVerdicts({ baseline: baseline.redis, checkpoints: last.run.checkpoints, after: last.after.redis, turns, sessions, caps: await bullCaps(redis, last.peak.redis.keys) });
      const pick = (snap) => ({ used_memory: snap.used_memory, dbsize: snap.dbsize });
      const expiring = verdicts.by_pattern.filter((p) => p.keys.after_purge > p.keys.baseline && p.ttl.startsWith('every key expires'));
      const completed = done.reduce((sum, d) => sum + d.run.completed, 0);
      const errors = done.reduce((sum, d) => sum + d.run.errors, 0);
      const report = {
        description: `${rounds} round(s) of: ${turns} echo turns (${messageBytes}-byte messages, scripted:echo) over ${sessions} sessions, ${concurrency} sessions driven at a time, each turn awaited on its SSE stream, each session deleted through the API after its turns (deletions interleave with the other lanes' turns); then ${purge.name}, a plain VACUUM (ANALYZE). Relation sizes (pg_total_relation_size: heap, TOAST and indexes) and live rows (reltuples), and Redis (every key: TYPE, PTTL, MEMORY USAGE, length) at baseline, peak and after the purge`,
        config: { turns, sessions, concurrency, rounds, message_bytes: messageBytes, margin_pct: marginPct, retention_sweep_ms: Number(stack.env.RETENTION_SWEEP_MS ?? 60_000) },
        turns_completed: completed,
        errors,
        rounds: done.map((d, i) => ({
          round: i + 1,
          turns_per_s: round(d.run.completed / d.run.seconds),
          turn_phase_s: round(d.run.seconds, 1),
          purge: d.purged ?? null,
          sessions_left_after_purge: d.left,
          relations_peak_bytes: relationTable(baseline.pg, d.peak.pg, d.after.pg).total.peak,
          relations_after_purge_bytes: relationTable(baseline.pg, d.peak.pg, d.after.pg).total.after_purge,
        })),
        postgres: { ...relations, margin_bytes: margin, above_baseline_after_purge: relations.total.after_purge - relations.total.baseline, database_bytes: { baseline: baseline.pg.database_bytes, peak: last.peak.pg.database_bytes, after_purge: last.after.pg.database_bytes } },
        redis: {
          baseline: pick(baseline.redis),
          checkpoints: last.run.checkpoints.map((c) => ({ sessions_done: c.sessions_done, ...pick(c) })),
          after_purge: pick(last.after.redis),
          // Bounded, but not by the purge: keys of the deleted sessions that only their TTL removes.
          kept_until_ttl: expiring.map((p) => ({ pattern: p.pattern, keys: p.keys.after_purge - p.keys.baseline, bytes: p.bytes.after_purge - p.bytes.baseline, ttl: p.ttl })),
          scan_complete: baseline.redis.scan_complete && last.peak.redis.scan_complete && last.after.redis.scan_complete,
          ...verdicts,
        },
        wall_s: round((performance.now() - started) / 1000, 1),
        target: `after the purge and VACUUM, relation sizes within ${marginPct} % of the baseline; no Redis key or key pattern that grows with turns or sessions without a TTL or a cap (issue 43's soak)`,
      };
      report.space_reused = spaceReused(relations.total.baseline, report.rounds.map((x) => x.relations_peak_bytes), turns);
      report.met = errors === 0 && done.every((d) => d.left === 0) && report.postgres.above_baseline_after_purge <= margin && verdicts.unbounded.length === 0;
      printReport(report);
      return report;
    } finally {
      redis.disconnect();
      await db.end();
    }
  }

  /** One round: `concurrency` lanes over `sessions` sessions, each created, turned, closed and deleted; Redis probed at ¼, ½ and ¾. */
  async function drive({ turns, sessions, concurrency, messageBytes }) {
    const ids = [];
    const checkpoints = [];
    const probes = [];
    const marks = new Set([0.25, 0.5, 0.75].map((f) => Math.max(1, Math.round(sessions * f))));
    let next = 0;
    let finished = 0;
    let completed = 0;
    let errors = 0;
    const started = performance.now();
    const lane = async () => {
      while (next < sessions) {
        const index = next;
        next += 1;
        const { id } = await client.createSession();
        ids.push(id);
        const source = client.subscribe(id);
        try {
          await opened(source);
          for (let t = 0; t < turnsOfSession(index, turns, sessions); t += 1) {
            try {
              const turnDone = nextEvent(source, 'agent.session.turn.completed');
              // A failed send leaves `turnDone` to time out: handled here, still awaited below when sent.
              turnDone.catch(() => undefined);
              await client.send(id, `soak ${index} turn ${t} `.padEnd(messageBytes, 'x'));
              await turnDone;
              completed += 1;
            } catch (error) {
              errors += 1;
              if (errors <= 5) log('soak turn error:', String(error));
            }
          }
        } finally {
          source.close();
        }
        await client.deleteSession(id);
        finished += 1;
        if (marks.has(finished)) probes.push(redisKeysAt(finished, checkpoints));
        if (finished % Math.max(1, Math.round(sessions / 10)) === 0) log(`soak: ${finished}/${sessions} sessions, ${completed} turns`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, sessions) }, lane));
    const seconds = (performance.now() - started) / 1000;
    await Promise.all(probes);
    checkpoints.sort((x, y) => x.sessions_done - y.sessions_done);
    return { ids, checkpoints, completed, errors, seconds };
  }

  async function redisKeysAt(sessionsDone, into) {
    const redis = new Redis(stack.env.REDIS_URL, { connectionName: 'yuxi-soak-bench-probe', maxRetriesPerRequest: 1 });
    try {
      into.push({ sessions_done: sessionsDone, ...(await redisKeys(redis)) });
    } finally {
      redis.disconnect();
    }
  }

  function printReport(r) {
    const mb = (bytes) => `${round(bytes / 1048576, 2)} MiB`;
    const rowsOf = (t) => `${t.rows.baseline}/${t.rows.peak}/${t.rows.after_purge}`;
    const lines = [
      ...r.rounds.map((x) => `soak round ${x.round}: ${x.turns_per_s} turns/s over ${x.turn_phase_s} s; purge ${x.purge?.wall_s ?? '—'} s; relations at peak ${mb(x.relations_peak_bytes)}, after purge ${mb(x.relations_after_purge_bytes)}`),
      `soak: ${r.turns_completed} turns (${r.errors} errors); wall ${r.wall_s} s; space reused by later rounds: ${r.space_reused === null ? '— (fewer than 3 rounds)' : `${r.space_reused.reused} (${r.space_reused.later_rounds_bytes_per_turn} B/turn after round 2 against ${r.space_reused.first_round_bytes_per_turn} in round 1)`}`,
      `relations: baseline ${mb(r.postgres.total.baseline)}, peak ${mb(r.postgres.total.peak)}, after purge ${mb(r.postgres.total.after_purge)} (${r.postgres.above_baseline_after_purge} B above baseline; margin ${r.postgres.margin_bytes} B)`,
      '| table | bytes: baseline | peak | after purge | live rows: baseline/peak/after |',
      '|---|---|---|---|---|',
      ...r.postgres.by_table.map((t) => `| ${t.table} | ${t.baseline} | ${t.peak} | ${t.after_purge} | ${rowsOf(t)} |`),
      `still above baseline: ${r.postgres.left.slice(0, 8).map((t) => `${t.table} +${t.above_baseline} B (${t.rows_above_baseline} rows)`).join(', ') || 'none'}`,
      `Redis used_memory ${mb(r.redis.baseline.used_memory)} → peak ${mb(r.redis.checkpoints.at(-1).used_memory)} → after purge ${mb(r.redis.after_purge.used_memory)}; DBSIZE ${r.redis.baseline.dbsize} → ${r.redis.checkpoints.at(-1).dbsize} → ${r.redis.after_purge.dbsize}`,
      `Redis patterns (keys baseline/peak/after, bytes at peak, TTL): ${r.redis.by_pattern.slice(0, 8).map((p) => `${p.pattern} ${p.keys.baseline}/${p.keys.peak}/${p.keys.after_purge} ${p.bytes.peak} B (${p.ttl})`).join('; ')}`,
      `Redis kept after the purge until a TTL: ${r.redis.kept_until_ttl.map((k) => `${k.pattern} ${k.keys} keys ${mb(k.bytes)} (${k.ttl})`).join('; ') || 'none'}`,
      `largest keys at peak: ${r.redis.largest_keys.slice(0, 5).map((k) => `${k.key} ${k.type} ${k.length} ${k.bytes} B ttl ${k.ttl_s ?? 'none'}`).join('; ')}`,
      `unbounded Redis: ${r.redis.unbounded.map((u) => `${u.key ?? u.pattern}: ${u.why}`).join('; ') || 'none seen'}`,
      `met: ${r.met}`,
    ];
    log(lines.join('\n'));
  }
}
