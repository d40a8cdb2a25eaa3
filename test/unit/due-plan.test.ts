import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CatchUpPolicy, type CronSchedule, type DueInput, parseSchedule, planDue } from '#libs/automations';

function schedule(expression: string, timezone = 'UTC'): CronSchedule {
  const parsed = parseSchedule(expression, timezone, 1);
  assert.ok('schedule' in parsed);
  return parsed.schedule;
}

const EVERY_MINUTE = schedule('* * * * *');
const at = (iso: string): Date => new Date(iso);
const isos = (dates: Date[]): string[] => dates.map((d) => d.toISOString());
const fires = (plan: ReturnType<typeof planDue>): string[] => plan.fire.map((f) => `${f.at.toISOString()} ${f.reason}`);

function plan(overrides: Partial<DueInput> & { catchUp: CatchUpPolicy }): ReturnType<typeof planDue> {
  return planDue({
    nextRunAt: at('2026-05-01T10:00:00Z'),
    now: at('2026-05-01T10:00:05Z'),
    schedule: EVERY_MINUTE,
    graceMs: 60_000,
    maxCatchUp: 10,
    maxEnumerated: 1000,
    ...overrides,
  });
}

describe('due plan: one time due, on time', () => {
  for (const catchUp of ['none', 'latest', 'all'] as const) {
    it(`${catchUp}: fires it as scheduled, skips nothing; next is the first time after now`, () => {
      const p = plan({ catchUp });
      assert.deepEqual(fires(p), ['2026-05-01T10:00:00.000Z scheduled']);
      assert.deepEqual(p.skip, []);
      assert.equal(p.uncounted, 0);
      assert.equal(p.next?.toISOString(), '2026-05-01T10:01:00.000Z');
    });
  }

  it('nothing is due before next_run_at: an empty plan that keeps next_run_at', () => {
    const p = plan({ catchUp: 'all', now: at('2026-05-01T09:59:59Z') });
    assert.deepEqual(p, { skip: [], fire: [], uncounted: 0, next: at('2026-05-01T10:00:00Z') });
  });

  it('a time exactly at the grace bound is on time; a millisecond later it is late', () => {
    assert.deepEqual(fires(plan({ catchUp: 'none', now: at('2026-05-01T10:00:30Z'), graceMs: 30_000 })), ['2026-05-01T10:00:00.000Z scheduled']);
    assert.deepEqual(fires(plan({ catchUp: 'none', now: at('2026-05-01T10:00:30.001Z'), graceMs: 30_000 })), []);
  });
});

describe('due plan: missed times per catch_up policy', () => {
  // Down from 10:00 to 10:04:20: 10:00-10:04 are due, 10:04 is the latest (20 s ago, within grace).
  const down = { now: at('2026-05-01T10:04:20Z') };
  const missed = ['2026-05-01T10:00:00.000Z', '2026-05-01T10:01:00.000Z', '2026-05-01T10:02:00.000Z', '2026-05-01T10:03:00.000Z'];

  it('none: the latest fires when on time, the missed ones are skipped', () => {
    const p = plan({ catchUp: 'none', ...down });
    assert.deepEqual(fires(p), ['2026-05-01T10:04:00.000Z scheduled']);
    assert.deepEqual(isos(p.skip), missed);
    assert.equal(p.next?.toISOString(), '2026-05-01T10:05:00.000Z');
  });

  it('none: when even the latest is late, nothing fires and all are skipped', () => {
    const p = plan({ catchUp: 'none', ...down, graceMs: 10_000 });
    assert.deepEqual(p.fire, []);
    assert.deepEqual(isos(p.skip), [...missed, '2026-05-01T10:04:00.000Z']);
  });

  it('latest: the latest fires as catch_up (others were missed), the rest are skipped', () => {
    const p = plan({ catchUp: 'latest', ...down });
    assert.deepEqual(fires(p), ['2026-05-01T10:04:00.000Z catch_up']);
    assert.deepEqual(isos(p.skip), missed);
  });

  it('latest: a lone late time fires as catch_up', () => {
    const p = plan({ catchUp: 'latest', now: at('2026-05-01T10:00:50Z'), graceMs: 10_000 });
    assert.deepEqual(fires(p), ['2026-05-01T10:00:00.000Z catch_up']);
    assert.deepEqual(p.skip, []);
  });

  it('all: each due time fires oldest first; the on-time latest as scheduled', () => {
    const p = plan({ catchUp: 'all', ...down });
    assert.deepEqual(fires(p), [...missed.map((t) => `${t} catch_up`), '2026-05-01T10:04:00.000Z scheduled']);
    assert.deepEqual(p.skip, []);
  });

  it('all: at most maxCatchUp fire (the most recent), the older ones are skipped', () => {
    const p = plan({ catchUp: 'all', ...down, maxCatchUp: 2, graceMs: 10_000 });
    assert.deepEqual(fires(p), ['2026-05-01T10:03:00.000Z catch_up', '2026-05-01T10:04:00.000Z catch_up']);
    assert.deepEqual(isos(p.skip), missed.slice(0, 3));
  });
});

describe('due plan: bounded enumeration', () => {
  it('beyond maxEnumerated the most recent are listed and the older ones counted, not listed', () => {
    // Every 10 s, down for a day: 8,640 times due (the next_run_at included, 10:00:00 the next day too).
    const p = planDue({
      nextRunAt: at('2026-05-01T10:00:00Z'),
      now: at('2026-05-02T10:00:05Z'),
      schedule: schedule('*/10 * * * * *'),
      catchUp: 'latest',
      graceMs: 60_000,
      maxCatchUp: 10,
      maxEnumerated: 100,
    });
    assert.deepEqual(fires(p), ['2026-05-02T10:00:00.000Z catch_up']);
    assert.equal(p.skip.length, 100);
    assert.equal(p.skip[0]!.toISOString(), '2026-05-02T09:43:20.000Z');
    assert.equal(p.skip[99]!.toISOString(), '2026-05-02T09:59:50.000Z');
    assert.equal(p.uncounted + p.skip.length + p.fire.length, 8_641);
    assert.equal(p.next?.toISOString(), '2026-05-02T10:00:10.000Z');
  });

  it('a few more than maxEnumerated: the count of the jumped ones is exact', () => {
    // 10:00..10:05 due (6 times), at most 3 missed listed.
    const p = plan({ catchUp: 'latest', now: at('2026-05-01T10:05:01Z'), maxEnumerated: 3 });
    assert.deepEqual(fires(p), ['2026-05-01T10:05:00.000Z catch_up']);
    assert.deepEqual(isos(p.skip), ['2026-05-01T10:02:00.000Z', '2026-05-01T10:03:00.000Z', '2026-05-01T10:04:00.000Z']);
    assert.equal(p.uncounted, 2);
  });

  it('all with maxEnumerated 0 still fires the latest', () => {
    const p = plan({ catchUp: 'all', now: at('2026-05-01T10:05:01Z'), maxEnumerated: 0 });
    assert.deepEqual(fires(p), ['2026-05-01T10:05:00.000Z scheduled']);
    assert.deepEqual(p.skip, []);
    assert.equal(p.uncounted, 5);
  });

  it('a per-second schedule down for a year plans in one bounded walk', () => {
    const p = planDue({
      nextRunAt: at('2025-05-01T00:00:00Z'),
      now: at('2026-05-01T00:00:00.500Z'),
      schedule: schedule('* * * * * *'),
      catchUp: 'all',
      graceMs: 60_000,
      maxCatchUp: 10,
      maxEnumerated: 1000,
    });
    assert.equal(p.fire.length, 10);
    assert.equal(p.fire[9]!.at.toISOString(), '2026-05-01T00:00:00.000Z');
    assert.equal(p.skip.length, 991);
    assert.equal(p.uncounted + p.skip.length + p.fire.length, 365 * 86_400 + 1);
    assert.equal(p.next?.toISOString(), '2026-05-01T00:00:01.000Z');
  });

  it('across a fall-back, an hourly schedule lists each real hour once; a daily one its time once', () => {
    const hourly = planDue({
      nextRunAt: at('2026-10-24T22:00:00Z'),
      now: at('2026-10-25T04:00:00Z'),
      schedule: schedule('0 * * * *', 'Europe/Berlin'),
      catchUp: 'none',
      graceMs: 60_000,
      maxCatchUp: 10,
      maxEnumerated: 1000,
    });
    assert.equal(hourly.skip.length + hourly.fire.length, 7);
    const daily = planDue({
      nextRunAt: at('2026-10-24T00:30:00Z'),
      now: at('2026-10-26T12:00:00Z'),
      schedule: schedule('30 2 * * *', 'Europe/Berlin'),
      catchUp: 'all',
      graceMs: 60_000,
      maxCatchUp: 10,
      maxEnumerated: 1,
    });
    assert.deepEqual(isos(daily.fire.map((f) => f.at)), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    assert.equal(daily.uncounted, 1);
  });
});

describe('due plan: once schedules', () => {
  const once = { schedule: null, nextRunAt: at('2026-05-01T10:00:00Z') };

  it('on time: fires as scheduled, no next (it completes)', () => {
    for (const catchUp of ['none', 'latest', 'all'] as const) {
      const p = plan({ ...once, catchUp, now: at('2026-05-01T10:00:01Z') });
      assert.deepEqual(fires(p), ['2026-05-01T10:00:00.000Z scheduled'], catchUp);
      assert.equal(p.next, null);
    }
  });

  it('late: none skips it, latest and all fire it as catch_up; no next either way', () => {
    const late = { ...once, now: at('2026-05-01T12:00:00Z') };
    const none = plan({ ...late, catchUp: 'none' });
    assert.deepEqual(none.fire, []);
    assert.deepEqual(isos(none.skip), ['2026-05-01T10:00:00.000Z']);
    assert.equal(none.next, null);
    assert.deepEqual(fires(plan({ ...late, catchUp: 'latest' })), ['2026-05-01T10:00:00.000Z catch_up']);
    assert.deepEqual(fires(plan({ ...late, catchUp: 'all' })), ['2026-05-01T10:00:00.000Z catch_up']);
  });
});
