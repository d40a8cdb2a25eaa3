import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AppConfig } from '#libs/config';
import type { BudgetsRepository } from '#libs/budgets';
import type { SessionPurgeRepository } from '#libs/engine';
import type { WorkspacesRepository } from '#libs/environments';
import type { EventOutbox } from '#libs/events';
import type { FilesRepository } from '#libs/files';
import type { StorageUsageRepository } from '#libs/protocol';
import { isPurgeDue, PURGE_FAILED_RETRY_S, PURGE_PIN_RECHECK_S, PURGE_SESSIONS_PER_BATCH, purgeBatchOutcome, SESSION_PURGE_STEPS, SessionPurge } from '#libs/retention';
import type { SpanRetention } from '#libs/traces';

// The purge of deleted sessions (retention kind deleted_sessions): the order of its steps against
// what references what, what "due" means, what a batch leads to, and the task over stand-ins.

/** Every table in the order one batch deletes from it. */
const ORDER: string[] = SESSION_PURGE_STEPS.flatMap((step) => [...step.tables]);

/** (a row of this table, references a row of that one): the first must go first, whether by a foreign key or by value. */
const REFERENCES: [string, string][] = [
  ['items', 'runs'],
  ['items', 'turns'],
  ['run_steps', 'runs'],
  ['model_requests', 'run_steps'],
  ['model_requests', 'runs'],
  ['runs', 'turns'],
  ['runs', 'inputs'], // a run's input_ids
  ['inputs', 'turns'], // a consumed input's turn_id
  ['idempotency_receipts', 'inputs'],
  ['session_artifacts', 'turns'],
  ['session_artifacts', 'workspace_versions'],
  ['workspace_versions', 'turns'],
  ['files', 'inputs'],
  ['turns', 'cooperation_signals'], // the other way: a member's ended turn keeps its signal while it exists (invariant member_turn_end_signalled)
  ['session_events', 'turns'], // events name turns and items by value: a stream never outlives its rows
  ['session_spans', 'turns'],
  ['workspaces', 'session_lineage'], // a fork's workspace is based on its source's version: gone before the fork's lineage frees the source
];

describe('session purge plan', () => {
  it('deletes every row before the rows it references, and each table once', () => {
    assert.equal(new Set(ORDER).size, ORDER.length);
    for (const [child, parent] of REFERENCES) {
      assert.ok(ORDER.includes(child) && ORDER.includes(parent), `${child} and ${parent} are purged`);
      assert.ok(ORDER.indexOf(child) < ORDER.indexOf(parent), `${child} goes before ${parent}`);
    }
    assert.ok(!ORDER.includes('sessions'), 'the sessions row is no step: it goes after all of them, where nothing references it');
  });

  it('due: deleted strictly longer ago than the grace, and named by no lineage as ancestor', () => {
    const now = new Date('2026-12-06T00:00:00Z');
    const grace = 7 * 24 * 3600;
    const at = (secondsAgo: number) => new Date(now.getTime() - secondsAgo * 1000);
    assert.equal(isPurgeDue({ deletedAt: null, isAncestor: false }, now, grace), false, 'a live session');
    assert.equal(isPurgeDue({ deletedAt: at(grace - 1), isAncestor: false }, now, grace), false, 'within the grace');
    assert.equal(isPurgeDue({ deletedAt: at(grace), isAncestor: false }, now, grace), false, 'exactly at the grace');
    assert.equal(isPurgeDue({ deletedAt: at(grace + 1), isAncestor: false }, now, grace), true);
    assert.equal(isPurgeDue({ deletedAt: at(grace * 10), isAncestor: true }, now, grace), false, 'a fork still reads its history');
    assert.equal(isPurgeDue({ deletedAt: at(1), isAncestor: false }, now, 0), true, 'grace 0: at once');
  });

  it('a batch: more while anything moved; sessions that moved nothing are held', () => {
    assert.deepEqual(purgeBatchOutcome(0, 0, 0), { more: false, hold: false });
    assert.deepEqual(purgeBatchOutcome(3, 120, 0), { more: true, hold: false });
    assert.deepEqual(purgeBatchOutcome(3, 0, 2), { more: true, hold: false });
    assert.deepEqual(purgeBatchOutcome(3, 0, 0), { more: false, hold: true });
  });
});

/**
 * Stand-ins recording the calls: each lib's purge answers what `removed` says for it; a purge whose
 * ids include one of `failing` throws (a statement over a batch fails for all of its sessions).
 */
function standIns(due: string[], removed: Record<string, number>, gone: string[] = [], options: { pinned?: number; failing?: string[] } = {}) {
  const calls: string[] = [];
  const purge = (name: string) => async (ids: string[], limit: number) => {
    calls.push(`${name}(${ids.length},${limit})`);
    if (name === 'aggregate' && ids.some((id) => options.failing?.includes(id))) throw new Error('update or delete on table "runs" violates foreign key constraint');
    return { rows: removed[name] ?? 0, bytes: (removed[name] ?? 0) * 100 };
  };
  const sessions = {
    due: async (graceS: number, count: number, pinS: number) => {
      calls.push(`due(${graceS},${count},${pinS})`);
      return { ids: due, pinned: options.pinned ?? 0 };
    },
    purgeRows: purge('aggregate'),
    removeSessions: async (ids: string[]) => {
      calls.push(`removeSessions(${ids.length})`);
      const left = gone.filter((id) => ids.includes(id));
      return { ids: left, bytes: left.length * 500 };
    },
    hold: async (ids: string[], afterS = 0) => {
      calls.push(`hold(${ids.join(',')}${afterS ? `,${afterS}` : ''})`);
    },
    lagSeconds: async () => 42,
  };
  const task = new SessionPurge(
    { sessionPurgeAfterS: 604800 } as AppConfig,
    sessions as unknown as SessionPurgeRepository,
    { purgeSessions: purge('events'), dropStreams: async (ids: string[]) => void calls.push(`dropStreams(${ids.length})`) } as unknown as EventOutbox,
    { purgeSessions: purge('spans') } as unknown as SpanRetention,
    { purgeSessions: purge('environment') } as unknown as WorkspacesRepository,
    { purgeSessions: purge('files') } as unknown as FilesRepository,
    { removeSessions: async (ids: string[]) => void calls.push(`storageUsage(${ids.length})`) } as unknown as StorageUsageRepository,
    { purgeSessions: purge('budgets') } as unknown as BudgetsRepository,
  );
  return { task, calls };
}

const DUE_CALL = `due(604800,${PURGE_SESSIONS_PER_BATCH},${PURGE_PIN_RECHECK_S})`;

describe('SessionPurge over stand-ins', () => {
  it('nothing due: one look, nothing else', async () => {
    const { task, calls } = standIns([], {});
    assert.deepEqual(await task.runBatch(500), { rows: 0, bytes: 0, more: false });
    assert.deepEqual(calls, [DUE_CALL]);
  });

  it('runs the libs in the plan order, the sessions rows last; file tombstones are progress but not removals', async () => {
    const { task, calls } = standIns(['a', 'b'], { events: 10, spans: 2, environment: 1, files: 3, aggregate: 40 }, ['a']);
    assert.deepEqual(await task.runBatch(50), { rows: 10 + 2 + 1 + 40 + 1, bytes: (10 + 2 + 1 + 40) * 100 + 500, more: true });
    assert.deepEqual(calls, [
      DUE_CALL,
      'events(2,50)',
      'spans(2,50)',
      'environment(2,50)',
      'files(2,50)',
      'budgets(2,50)',
      'aggregate(2,50)',
      'storageUsage(2)',
      'removeSessions(2)',
      'dropStreams(1)',
    ]);
  });

  it('only file tombstones made: more (the sweep will remove them), not held', async () => {
    const { task, calls } = standIns(['a'], { files: 2 });
    assert.deepEqual(await task.runBatch(50), { rows: 0, bytes: 0, more: true });
    assert.ok(!calls.some((call) => call.startsWith('hold')));
  });

  it('due sessions that nothing moved are held and the tick stops', async () => {
    const { task, calls } = standIns(['a', 'b', 'c'], {});
    assert.deepEqual(await task.runBatch(50), { rows: 0, bytes: 0, more: false });
    assert.equal(calls.at(-1), 'hold(a,b,c,60)', 'held for one files sweep interval (FILE_SWEEP_MS; 60 s by default)');
    assert.equal(await task.lagSeconds(), 42);
  });

  it('only pinned sources found (a fork still names them): nothing to purge, but more (the sessions behind them come next)', async () => {
    const { task, calls } = standIns([], {}, [], { pinned: 3 });
    assert.deepEqual(await task.runBatch(50), { rows: 0, bytes: 0, more: true });
    assert.deepEqual(calls, [DUE_CALL]);
  });

  it('a failing batch: each session alone; the one that fails again is held for later, the others are purged', async () => {
    const { task, calls } = standIns(['a', 'bad', 'c'], { aggregate: 4 }, ['a', 'c'], { failing: ['bad'] });
    const done = await task.runBatch(50);
    assert.equal(done.more, true);
    assert.equal(done.rows, 4 + 1 + 4 + 1, 'a and c: their rows and their sessions rows');
    assert.ok(calls.includes(`hold(bad,${PURGE_FAILED_RETRY_S})`), calls.join(' '));
    assert.ok(!calls.some((call) => call.startsWith('hold(a') || call.startsWith('hold(c')), 'the others moved: not held');
    assert.equal(calls.filter((call) => call === 'removeSessions(1)').length, 2, 'a and c each reached their sessions row');
  });
});
