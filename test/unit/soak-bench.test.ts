// The bench's soak (bench/lib/soak-scenario.mjs, issue 43): how it spreads turns, tabulates relation
// sizes, and which Redis keys it calls unbounded, checked on fixed snapshots.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromRoot } from '../support/stack-scripts.js';

interface Key {
  pattern: string;
  type: string;
  ttl_ms: number;
  bytes: number;
  length: number;
}
interface Probe {
  keys: Record<string, Key>;
}
interface SoakLib {
  soakOptions(env: Record<string, string | undefined>): { turns: number; sessions: number; concurrency: number; marginPct: number; rounds: number };
  turnsOfSession(index: number, turns: number, sessions: number): number;
  relationTable(baseline: any, peak: any, after: any, top?: number): any;
  spaceReused(baselineBytes: number, peaks: number[], turns: number): any;
  redisVerdicts(input: { baseline: Probe; checkpoints: Probe[]; after: Probe; turns: number; sessions: number; caps?: Record<string, number> }): any;
}

const lib = (): Promise<SoakLib> => loadFromRoot<SoakLib>('bench/lib/soak-scenario.mjs');
const key = (pattern: string, type: string, length: number, ttlMs = -1, bytes = 100): Key => ({ pattern, type, ttl_ms: ttlMs, bytes, length });

describe('soak bench', () => {
  it('is sized by the environment, the issue’s size by default, and spreads every turn over the sessions', async () => {
    const { soakOptions, turnsOfSession } = await lib();
    assert.deepEqual(soakOptions({}), { turns: 20_000, sessions: 2_000, concurrency: 4, marginPct: 10, rounds: 1 });
    assert.deepEqual(soakOptions({ BENCH_SOAK_ROUNDS: '2', BENCH_SOAK_TURNS: '600', BENCH_SOAK_SESSIONS: '60', BENCH_SOAK_CONCURRENCY: '2', BENCH_SOAK_MARGIN_PCT: '0' }), { turns: 600, sessions: 60, concurrency: 2, marginPct: 0, rounds: 2 });
    assert.deepEqual(soakOptions({ BENCH_SOAK_TURNS: 'many', BENCH_SOAK_CONCURRENCY: '-3' }), { turns: 20_000, sessions: 2_000, concurrency: 1, marginPct: 10, rounds: 1 });
    const spread = Array.from({ length: 7 }, (_, i) => turnsOfSession(i, 23, 7));
    assert.deepEqual(spread, [4, 4, 3, 3, 3, 3, 3]);
    assert.equal(spread.reduce((a, b) => a + b, 0), 23);
  });

  it('tabulates relation sizes at baseline, peak and after the purge, the largest at peak first', async () => {
    const { relationTable } = await lib();
    const snap = (sizes: Record<string, number>, rows: Record<string, number>) => ({ tables: Object.entries(sizes).map(([table, total_bytes]) => ({ table, total_bytes })), rows });
    const t = relationTable(
      snap({ items: 16384, agents: 8192 }, { items: 2, agents: 1 }),
      snap({ items: 81920, agents: 8192, session_events: 163840 }, { items: 400, agents: 1, session_events: 2200 }),
      snap({ items: 16384, agents: 8192, session_events: 24576 }, { items: 2, agents: 1, session_events: 0 }),
      2,
    );
    assert.deepEqual(t.total, { baseline: 24576, peak: 253952, after_purge: 49152 });
    assert.deepEqual(t.by_table.map((r: any) => r.table), ['session_events', 'items']);
    assert.deepEqual(t.by_table[1].rows, { baseline: 2, peak: 400, after_purge: 2 });
    assert.deepEqual(t.left, [{ table: 'session_events', above_baseline: 24576, rows_above_baseline: 0 }], 'free space, no row left');
  });

  it('sees freed space used again when the rounds after the second grow by at most a tenth of the first', async () => {
    const { spaceReused } = await lib();
    assert.equal(spaceReused(1000, [21_000, 24_000], 100), null, 'two rounds: round 2 still grows (pages recycled from the next VACUUM on)');
    assert.deepEqual(spaceReused(1000, [21_000, 24_000, 24_100, 24_200], 100), { first_round_bytes_per_turn: 200, later_rounds_bytes_per_turn: 1, reused: true });
    assert.equal(spaceReused(1000, [21_000, 24_000, 30_000], 100).reused, false);
  });

  it('calls unbounded a per-session key kept without TTL and a key growing without TTL or cap, not an expiring or capped one', async () => {
    const { redisVerdicts } = await lib();
    const baseline: Probe = { keys: { 'bull:q:events': key('bull:q:events', 'stream', 10), 'log:all': key('log:all', 'list', 5) } };
    const mid: Probe = { keys: { 'bull:q:events': key('bull:q:events', 'stream', 300), 'log:all': key('log:all', 'list', 200) } };
    const peak: Probe = { keys: { 'bull:q:events': key('bull:q:events', 'stream', 600), 'log:all': key('log:all', 'list', 400) } };
    const after: Probe = { keys: { ...peak.keys } };
    for (let i = 0; i < 60; i += 1) {
      peak.keys[`yuxi:session-events:{${i}}`] = key('yuxi:session-events:*', 'stream', 110, 600_000, 20_000);
      after.keys[`yuxi:session-events:{${i}}`] = key('yuxi:session-events:*', 'stream', 110, 590_000, 20_000);
      after.keys[`kept:${i}`] = key('kept:*', 'string', 3);
    }
    const v = redisVerdicts({ baseline, checkpoints: [mid, peak], after, turns: 600, sessions: 60, caps: { 'bull:q:events': 10_000 } });
    assert.deepEqual(v.unbounded.map((u: any) => u.key ?? u.pattern), ['kept:*', 'log:all']);
    const events = v.by_pattern.find((p: any) => p.pattern === 'yuxi:session-events:*');
    assert.deepEqual([events.keys, events.ttl, events.unbounded], [{ baseline: 0, peak: 60, after_purge: 60 }, 'every key expires (≤ 600 s)', false]);
    assert.equal(v.largest_keys[0].pattern, 'yuxi:session-events:*');
    // Past its cap, a capped key is unbounded too; one that stopped growing is not.
    const capped = redisVerdicts({ baseline, checkpoints: [mid, peak], after, turns: 600, sessions: 60, caps: { 'bull:q:events': 500 } });
    assert.ok(capped.unbounded.some((u: any) => u.key === 'bull:q:events'));
    const flat = redisVerdicts({ baseline, checkpoints: [peak, peak], after: baseline, turns: 600, sessions: 60 });
    assert.deepEqual(flat.unbounded, []);
  });
});
