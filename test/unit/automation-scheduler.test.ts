import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type AfterMissed,
  type AutomationFirer,
  type AutomationRecord,
  AutomationScheduler,
  AutomationSweep,
  AutomationTimers,
  type DueStore,
  type FireOutcome,
  type ScheduledOccurrence,
  timerJobId,
} from '#libs/automations';
import type { AppConfig } from '#libs/config';

// The scheduler's decisions for one automation (AutomationScheduler.runDue), over a fake store, firer
// and timers and the real due plan: what it records as missed, what it fires and in which order,
// what it arms, and that it stops as soon as another worker has the time (stale).

const T = new Date('2026-03-01T12:00:00.000Z');
const at = (seconds: number): Date => new Date(T.getTime() + seconds * 1000);

function automation(overrides: Partial<AutomationRecord> = {}): AutomationRecord {
  return {
    id: 'a1',
    ownerId: 'o1',
    principal: { userId: 'o1', actorId: 'o1', keyId: null, access: 'full', appId: null, endUser: null, role: null, isAdmin: false },
    name: 'every second',
    type: 'periodic',
    expression: '* * * * * *',
    timezone: 'UTC',
    runAt: null,
    target: { type: 'existing_session', session_id: 's1', instructions: 'go' },
    targetSessionId: 's1',
    agentId: null,
    metadata: {},
    overlap: 'skip',
    catchUp: 'latest',
    status: 'active',
    pauseReason: null,
    nextRunAt: T,
    createdAt: at(-60),
    updatedAt: at(-60),
    ...overrides,
  };
}

interface World {
  scheduler: AutomationScheduler;
  missed: { expected: Date; missed: Date[]; after: AfterMissed }[];
  fires: ScheduledOccurrence[];
  armed: Date[];
  /** The database clock each arm was given (a re-arm of an early timer), undefined for a plain arm. */
  clocks: (Date | undefined)[];
}

function world(record: AutomationRecord, now: Date, options: { guardHolds?: boolean; fire?: (o: ScheduledOccurrence) => FireOutcome } = {}): World {
  const w: Omit<World, 'scheduler'> = { missed: [], fires: [], armed: [], clocks: [] };
  const store = {
    read: async () => ({ automation: record, now }),
    recordMissed: async (_id: string, expected: Date, missed: Date[], after: AfterMissed) => {
      w.missed.push({ expected, missed, after });
      return (options.guardHolds ?? true) ? missed.length : null;
    },
  } as unknown as DueStore;
  const firer = {
    fireScheduled: async (o: ScheduledOccurrence) => {
      w.fires.push(o);
      return options.fire ? options.fire(o) : ({ kind: 'recorded', invocation: {} } as FireOutcome);
    },
  } as unknown as AutomationFirer;
  const timers = {
    arm: async (_id: string, time: Date, clock?: Date) => {
      w.armed.push(time);
      w.clocks.push(clock);
    },
  } as unknown as AutomationTimers;
  const config = { automationMisfireGraceS: 60, automationCatchUpMax: 2 } as AppConfig;
  return { ...w, scheduler: new AutomationScheduler(store, firer, timers, config) };
}

describe('AutomationScheduler.runDue', () => {
  it('fires an on-time time alone (no missed-times transaction), then arms the next one', async () => {
    const w = world(automation(), at(0.05));
    assert.deepEqual(await w.scheduler.runDue('a1'), { fired: 1, skipped: 0, stale: false });
    assert.deepEqual(w.missed, [], 'nothing missed: the firer\'s own guard is the only transaction');
    assert.deepEqual(w.fires, [{ automationId: 'a1', scheduledAt: T, reason: 'scheduled', next: at(1) }]);
    assert.deepEqual(w.armed, [at(1)]);
  });

  it('catch_up latest: records the older missed times as skipped, moves next_run_at to the latest, fires it late, arms the next', async () => {
    const w = world(automation(), at(4.5));
    assert.deepEqual(await w.scheduler.runDue('a1'), { fired: 1, skipped: 4, stale: false });
    assert.deepEqual(w.missed, [{ expected: T, missed: [at(0), at(1), at(2), at(3)], after: { nextRunAt: at(4) } }]);
    assert.deepEqual(w.fires, [{ automationId: 'a1', scheduledAt: at(4), reason: 'catch_up', next: at(5) }]);
    assert.deepEqual(w.armed, [at(5)]);
  });

  it('catch_up all: fires the most recent AUTOMATION_CATCH_UP_MAX oldest first, each moving next_run_at to the following one', async () => {
    const w = world(automation({ catchUp: 'all' }), at(4.5));
    await w.scheduler.runDue('a1');
    assert.deepEqual(w.missed.map((m) => m.missed), [[at(0), at(1), at(2)]]);
    assert.deepEqual(
      w.fires.map((f) => [f.scheduledAt, f.next]),
      [
        [at(3), at(4)],
        [at(4), at(5)],
      ],
    );
  });

  it('writes and fires nothing when another worker moved next_run_at first (the guard does not hold)', async () => {
    const w = world(automation(), at(4.5), { guardHolds: false });
    assert.deepEqual(await w.scheduler.runDue('a1'), { fired: 0, skipped: 0, stale: true });
    assert.deepEqual(w.fires, []);
    assert.deepEqual(w.armed, [], 'the winner arms the next time');
  });

  it('stops at the first fire another worker already took, and arms nothing', async () => {
    const w = world(automation({ catchUp: 'all' }), at(4.5), { fire: () => ({ kind: 'stale' }) });
    assert.deepEqual(await w.scheduler.runDue('a1'), { fired: 0, skipped: 3, stale: true });
    assert.equal(w.fires.length, 1);
    assert.deepEqual(w.armed, []);
  });

  it('a timer woken for a time that moved later arms the new time and fires nothing', async () => {
    const w = world(automation({ nextRunAt: at(30) }), T);
    assert.deepEqual(await w.scheduler.runDue('a1'), { fired: 0, skipped: 0, stale: false });
    assert.deepEqual(w.fires, []);
    assert.deepEqual(w.armed, [at(30)]);
    assert.deepEqual(w.clocks, [undefined], 'a plain arm: the same id as the api\'s arm of that time');
  });

  it('a timer woken early for its own time re-arms it on the database\'s clock (a job id of its own), firing nothing', async () => {
    const w = world(automation({ nextRunAt: at(30) }), T);
    assert.deepEqual(await w.scheduler.runDue('a1', at(30).getTime()), { fired: 0, skipped: 0, stale: false });
    assert.deepEqual(w.fires, []);
    assert.deepEqual([w.armed, w.clocks], [[at(30)], [T]]);
  });

  it('does nothing for a paused or completed automation', async () => {
    for (const status of ['paused', 'completed'] as const) {
      const w = world(automation({ status, nextRunAt: null }), at(10));
      assert.deepEqual(await w.scheduler.runDue('a1'), { fired: 0, skipped: 0, stale: false });
      assert.deepEqual([w.missed, w.fires, w.armed], [[], [], []]);
    }
  });

  it('a once automation fires its time with no next (the firer completes it), and arms nothing', async () => {
    const w = world(automation({ type: 'once', expression: null, timezone: null, runAt: T }), at(0.2));
    await w.scheduler.runDue('a1');
    assert.deepEqual(w.fires, [{ automationId: 'a1', scheduledAt: T, reason: 'scheduled', next: null }]);
    assert.deepEqual(w.armed, []);
  });

  it('a once automation missed past the grace under catch_up none is recorded skipped and completes', async () => {
    const w = world(automation({ type: 'once', expression: null, timezone: null, runAt: T, catchUp: 'none' }), at(120));
    assert.deepEqual(await w.scheduler.runDue('a1'), { fired: 0, skipped: 1, stale: false });
    assert.deepEqual(w.missed, [{ expected: T, missed: [T], after: { end: 'completed' } }]);
    assert.deepEqual(w.fires, []);
  });
});

describe('AutomationTimers.arm', () => {
  function timersOver(): { timers: AutomationTimers; added: { name: string; data: unknown; opts: { jobId: string; delay: number } }[] } {
    const added: { name: string; data: unknown; opts: { jobId: string; delay: number } }[] = [];
    const queue = { add: async (name: string, data: unknown, opts: { jobId: string; delay: number }) => void added.push({ name, data, opts }) };
    return { timers: new AutomationTimers(queue as never), added };
  }

  it('a re-arm of an early timer gets a job id other than the running job\'s, and a delay counted on the given clock', async () => {
    const { timers, added } = timersOver();
    await timers.arm('a1', at(30));
    await timers.arm('a1', at(30), at(20));
    assert.equal(added[0]!.opts.jobId, timerJobId('a1', at(30)));
    assert.notEqual(added[1]!.opts.jobId, added[0]!.opts.jobId, 'BullMQ ignores an add under the id of a job that exists (the running one)');
    assert.equal(added[1]!.opts.delay, 10_000);
    assert.deepEqual(added[1]!.data, { automationId: 'a1', at: at(30).getTime() });
  });

  it('arming never throws: a failed add is left to the sweep', async () => {
    const timers = new AutomationTimers({ add: async () => Promise.reject(new Error('redis down')) } as never);
    await timers.arm('a1', at(30));
  });
});

describe('AutomationSweep.run', () => {
  /** A sweep over a fake store whose due ids are `due` less the skipped ones, and a scheduler where the ids in `failing` throw. */
  function sweepOver(due: string[], failing: Set<string>) {
    const reads: { lagMs: number; skip: readonly string[] }[] = [];
    const prunes: { after: string; kept: number }[] = [];
    const store = {
      sweepRead: async (limit: number, lagMs: number, skip: readonly string[]) => {
        reads.push({ lagMs, skip: [...skip].sort() });
        return { active: due.length, due: due.length, ids: due.filter((id) => !skip.includes(id)).slice(0, limit) };
      },
      pruneInvocations: async (after: string, _automations: number, kept: number) => {
        prunes.push({ after, kept });
        return { last: prunes.length === 1 ? 'b0000000-0000-0000-0000-000000000000' : null, deleted: 3 };
      },
    } as unknown as DueStore;
    const runs: string[] = [];
    const scheduler = {
      runDue: async (id: string) => {
        runs.push(id);
        if (failing.has(id)) throw new Error('lock timeout');
        return { fired: 1, skipped: 0, stale: false };
      },
    } as unknown as AutomationScheduler;
    const sweep = new AutomationSweep(store, scheduler, { automationInvocationsKept: 7 } as AppConfig);
    return { sweep, reads, prunes, runs };
  }

  it('takes only times overdue by a few seconds (a time whose timer is firing is the timer\'s)', async () => {
    const { sweep, reads } = sweepOver(['a'], new Set());
    await sweep.run();
    assert.ok(reads[0]!.lagMs >= 1_000, `lag ${reads[0]!.lagMs} ms`);
  });

  it('an automation whose runs keep throwing is left out of the next sweeps, 1, 2, 4 ... of them, and the others still run', async () => {
    const failing = new Set(['bad']);
    const { sweep, reads, runs } = sweepOver(['bad', 'good'], failing);
    for (let i = 0; i < 8; i += 1) await sweep.run();
    // Sweep 1 fails it (skip 1 sweep), sweep 3 fails it again (skip 2), sweep 6 (skip 4).
    assert.deepEqual(reads.map((read) => read.skip.length), [0, 1, 0, 1, 1, 0, 1, 1]);
    assert.equal(runs.filter((id) => id === 'good').length, 8, 'the healthy one runs every sweep');
    assert.equal(runs.filter((id) => id === 'bad').length, 3);
    failing.clear();
    for (let i = 0; i < 4; i += 1) await sweep.run();
    const after = reads.slice(-2).map((read) => read.skip.length);
    assert.deepEqual(after, [0, 0], 'once it runs again it is forgotten');
  });

  it('remembers a bounded number of failing automations', async () => {
    const ids = Array.from({ length: 1_200 }, (_, i) => `f${i}`);
    const { sweep, reads } = sweepOver(ids, new Set(ids));
    await sweep.run();
    await sweep.run();
    assert.ok(reads[1]!.skip.length <= 1_000, `${reads[1]!.skip.length} ids backed off`);
  });

  it('prunes invocations every few sweeps with AUTOMATION_INVOCATIONS_KEPT, going round the automations', async () => {
    const { sweep, prunes } = sweepOver([], new Set());
    for (let i = 0; i < 18; i += 1) await sweep.run();
    assert.deepEqual(prunes, [
      { after: '00000000-0000-0000-0000-000000000000', kept: 7 },
      { after: 'b0000000-0000-0000-0000-000000000000', kept: 7 },
      { after: '00000000-0000-0000-0000-000000000000', kept: 7 },
    ]);
  });
});
