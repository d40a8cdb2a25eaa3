// The storage bench scenario (bench/lib/storage-scenarios.mjs, issue 43) reports growth per table,
// per index, per Redis key pattern: its arithmetic and its key grouping, checked on fixed snapshots.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadFromRoot } from '../support/stack-scripts.js';

interface Sizes {
  tables: { table: string; table_bytes: number; index_bytes: number; total_bytes: number }[];
  indexes: { index: string; table: string; bytes: number }[];
  database_bytes: number;
}
interface RedisSnap {
  used_memory: number;
  dbsize: number;
  patterns: Record<string, { keys: number; bytes: number }>;
  scan_complete: boolean;
}
interface StorageLib {
  keyPattern(key: string): string;
  sizeGrowth(before: Sizes, after: Sizes, turns: number): any;
  rowGrowth(byTable: Record<string, { rows: number; bytes: number }>, turns: number): any;
  redisGrowth(before: RedisSnap, after: RedisSnap, turns: number): any;
}

const lib = (): Promise<StorageLib> => loadFromRoot<StorageLib>('bench/lib/storage-scenarios.mjs');

describe('storage bench arithmetic', () => {
  it('groups Redis keys by pattern: hash tags, uuids, numbers and long tokens become *', async () => {
    const { keyPattern } = await lib();
    assert.equal(keyPattern('yuxi:session-events:{0b7e1c9a-3f1d-4c55-9a7e-2d1f0c3b4a5e}'), 'yuxi:session-events:*');
    assert.equal(keyPattern('bull:session-dispatch:42'), 'bull:session-dispatch:*');
    assert.equal(keyPattern('bull:session-dispatch:completed'), 'bull:session-dispatch:completed');
    assert.equal(keyPattern('yuxi:lineage:0b7e1c9a-3f1d-4c55-9a7e-2d1f0c3b4a5e'), 'yuxi:lineage:*');
    assert.equal(keyPattern('rl:yx_abcdefghij0123456789xyz'), 'rl:*');
    assert.equal(keyPattern('yuxi:workers'), 'yuxi:workers');
  });

  it('reports relation growth per table and index, per turn, the largest first, with the items share', async () => {
    const { sizeGrowth } = await lib();
    const before: Sizes = {
      tables: [
        { table: 'items', table_bytes: 8192, index_bytes: 16384, total_bytes: 24576 },
        { table: 'session_events', table_bytes: 8192, index_bytes: 8192, total_bytes: 16384 },
        { table: 'agents', table_bytes: 8192, index_bytes: 8192, total_bytes: 16384 },
      ],
      indexes: [
        { index: 'items_pkey', table: 'items', bytes: 16384 },
        { index: 'session_events_pkey', table: 'session_events', bytes: 8192 },
      ],
      database_bytes: 1_000_000,
    };
    const after: Sizes = {
      tables: [
        { table: 'items', table_bytes: 16384, index_bytes: 24576, total_bytes: 40960 },
        { table: 'session_events', table_bytes: 40960, index_bytes: 16384, total_bytes: 57344 },
        { table: 'agents', table_bytes: 8192, index_bytes: 8192, total_bytes: 16384 },
      ],
      indexes: [
        { index: 'items_pkey', table: 'items', bytes: 24576 },
        { index: 'session_events_pkey', table: 'session_events', bytes: 16384 },
      ],
      database_bytes: 1_065_536,
    };
    const growth = sizeGrowth(before, after, 8);
    assert.equal(growth.total_bytes, 16384 + 40960);
    assert.equal(growth.per_turn, (16384 + 40960) / 8);
    assert.deepEqual(
      growth.by_table.map((t: any) => [t.table, t.total_bytes, t.table_per_turn, t.index_per_turn]),
      [
        ['session_events', 40960, 4096, 1024],
        ['items', 16384, 1024, 1024],
      ],
      'agents did not move and is left out',
    );
    assert.deepEqual(
      growth.by_index.map((i: any) => [i.index, i.bytes, i.per_turn]),
      [
        ['items_pkey', 8192, 1024],
        ['session_events_pkey', 8192, 1024],
      ],
    );
    assert.equal(growth.conversation_bytes, 16384);
    assert.equal(growth.conversation_share, 0.286);
    assert.equal(growth.database_bytes, 65536);
  });

  it('reports exact row bytes per turn and the bytes kept per byte of conversation', async () => {
    const { rowGrowth } = await lib();
    const rows = rowGrowth({ items: { rows: 20, bytes: 4000 }, session_events: { rows: 60, bytes: 36000 }, agents: { rows: 0, bytes: 0 } }, 10);
    assert.equal(rows.rows, 80);
    assert.equal(rows.bytes, 40000);
    assert.equal(rows.per_turn, 4000);
    assert.equal(rows.conversation_share, 0.1);
    assert.equal(rows.bytes_per_conversation_byte, 10);
    assert.deepEqual(
      rows.by_table.map((t: any) => [t.table, t.rows_per_turn, t.bytes_per_turn]),
      [
        ['session_events', 6, 3600],
        ['items', 2, 400],
      ],
    );
  });

  it('reports Redis memory, keys and keys by pattern per turn, patterns that did not move left out', async () => {
    const { redisGrowth } = await lib();
    const before: RedisSnap = { used_memory: 1_000_000, dbsize: 10, patterns: { 'yuxi:workers': { keys: 1, bytes: 100 }, 'bull:q:*': { keys: 9, bytes: 900 } }, scan_complete: true };
    const after: RedisSnap = {
      used_memory: 1_040_000,
      dbsize: 30,
      patterns: { 'yuxi:workers': { keys: 1, bytes: 100 }, 'bull:q:*': { keys: 19, bytes: 1900 }, 'yuxi:session-events:*': { keys: 10, bytes: 30000 } },
      scan_complete: true,
    };
    const growth = redisGrowth(before, after, 20);
    assert.equal(growth.used_memory_per_turn, 2000);
    assert.equal(growth.keys_per_turn, 1);
    assert.equal(growth.scan_complete, true);
    assert.deepEqual(
      growth.by_pattern.map((p: any) => [p.pattern, p.keys, p.bytes_per_turn]),
      [
        ['yuxi:session-events:*', 10, 1500],
        ['bull:q:*', 10, 50],
      ],
    );
  });
});
