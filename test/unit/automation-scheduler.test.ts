import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type AfterMissed,
  type AutomationFirer,
  type AutomationRecord,
  AutomationScheduler,
  type AutomationTimers,
  type DueStore,
  type FireOutcome,
  type ScheduledOccurrence,
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
}

function world(record: AutomationRecord, now: Date, options: { guardHolds?: boolean; fire?: (o: ScheduledOccurrence) => FireOutcome } = {}): World {
  const w: Omit<World, 'scheduler'> = { missed: [], fires: [], armed: [] };
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
  const timers = { arm: async (_id: string, time: Date) => void w.armed.push(time) } as unknown as AutomationTimers;
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
