import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type CronSchedule, latestTimes, nextTime, nextTimes, parseSchedule, type ScheduleProblem, timesBetween } from '#libs/automations';

const HOUR = 3_600_000;

function schedule(expression: string, timezone = 'UTC', minIntervalS = 1): CronSchedule {
  const parsed = parseSchedule(expression, timezone, minIntervalS);
  assert.ok('schedule' in parsed, `${expression} in ${timezone} should parse: ${JSON.stringify(parsed)}`);
  return parsed.schedule;
}

function problems(expression: string, timezone = 'UTC', minIntervalS = 1): ScheduleProblem[] {
  const parsed = parseSchedule(expression, timezone, minIntervalS);
  assert.ok('problems' in parsed, `${expression} in ${timezone} should be refused`);
  return parsed.problems;
}

const iso = (dates: Date[]): string[] => dates.map((d) => d.toISOString());

/** The wall-clock time of `at` in `timezone`, as HH:MM. */
function wall(at: Date, timezone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone: timezone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at);
}

/** Every fire in [from, to), walked in one go. */
function firesBetween(s: CronSchedule, from: string, to: string): Date[] {
  const end = Date.parse(to);
  const out: Date[] = [];
  let after = new Date(Date.parse(from) - 1);
  for (let i = 0; i < 100_000; i += 1) {
    const next = nextTime(s, after);
    if (!next || next.getTime() >= end) break;
    out.push(next);
    after = next;
  }
  return out;
}

function assertEvenGaps(fires: Date[], gapMs: number): void {
  for (let i = 1; i < fires.length; i += 1) {
    assert.equal(fires[i]!.getTime() - fires[i - 1]!.getTime(), gapMs, `gap before ${fires[i]!.toISOString()}`);
  }
}

describe('cron schedules: 5 and 6 fields', () => {
  it('a 5-field expression fires on minutes; the next time is strictly after the given instant', () => {
    const s = schedule('*/15 * * * *');
    assert.deepEqual(iso(nextTimes(s, new Date('2026-05-01T10:00:00Z'), 3)), ['2026-05-01T10:15:00.000Z', '2026-05-01T10:30:00.000Z', '2026-05-01T10:45:00.000Z']);
    assert.equal(nextTime(s, new Date('2026-05-01T10:14:59.999Z'))?.toISOString(), '2026-05-01T10:15:00.000Z');
  });

  it('a 6-field expression has seconds first: */2 fires every two seconds on even seconds', () => {
    const s = schedule('*/2 * * * * *');
    const fires = nextTimes(s, new Date('2026-05-01T10:00:59.500Z'), 5);
    assert.deepEqual(iso(fires), ['2026-05-01T10:01:00.000Z', '2026-05-01T10:01:02.000Z', '2026-05-01T10:01:04.000Z', '2026-05-01T10:01:06.000Z', '2026-05-01T10:01:08.000Z']);
  });

  it('timesBetween lists the fires in (after, upTo], at most max', () => {
    const s = schedule('*/10 * * * * *');
    const from = new Date('2026-05-01T10:00:00Z');
    assert.deepEqual(iso(timesBetween(s, from, new Date('2026-05-01T10:00:30Z'), 10)), ['2026-05-01T10:00:10.000Z', '2026-05-01T10:00:20.000Z', '2026-05-01T10:00:30.000Z']);
    assert.deepEqual(iso(timesBetween(s, from, new Date('2026-05-01T10:00:30Z'), 2)), ['2026-05-01T10:00:10.000Z', '2026-05-01T10:00:20.000Z']);
    assert.deepEqual(timesBetween(s, from, new Date('2026-05-01T10:00:09.999Z'), 10), []);
    assert.deepEqual(timesBetween(s, from, from, 10), []);
  });

  it('leap days: 0 0 29 2 * fires on February 29 of leap years only, also in a zone', () => {
    assert.deepEqual(iso(nextTimes(schedule('0 0 29 2 *'), new Date('2026-01-01T00:00:00Z'), 3)), ['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z', '2036-02-29T00:00:00.000Z']);
    // Midnight in Berlin (CET, +01:00) is 23:00 UTC the day before.
    assert.deepEqual(iso(nextTimes(schedule('0 0 29 2 *', 'Europe/Berlin'), new Date('2028-03-01T00:00:00Z'), 2)), ['2032-02-28T23:00:00.000Z', '2036-02-28T23:00:00.000Z']);
    // The last day of February: 28 in 2027, 29 in 2028.
    assert.deepEqual(iso(nextTimes(schedule('0 12 L 2 *'), new Date('2027-01-01T00:00:00Z'), 2)), ['2027-02-28T12:00:00.000Z', '2028-02-29T12:00:00.000Z']);
  });

  it('a time zone moves the fires: 09:00 in New York is 14:00 UTC in winter and 13:00 UTC in summer', () => {
    const s = schedule('0 9 * * 1', 'America/New_York');
    assert.equal(nextTime(s, new Date('2026-01-01T00:00:00Z'))?.toISOString(), '2026-01-05T14:00:00.000Z');
    assert.equal(nextTime(s, new Date('2026-07-01T00:00:00Z'))?.toISOString(), '2026-07-06T13:00:00.000Z');
  });
});

describe('cron schedules: validation names the field', () => {
  it('refuses anything but 5 or 6 fields, and the library aliases', () => {
    for (const expression of ['* * * *', '* * * * * * *', '@reboot', '@daily', '0 0 * * * * 2026']) {
      const [problem] = problems(expression);
      assert.equal(problem?.field, 'expression', expression);
      assert.match(problem!.message, /5 fields .* or 6/, expression);
    }
    assert.equal(problems('   ')[0]?.field, 'expression');
  });

  it('a value out of range names its cron field', () => {
    assert.match(problems('60 * * * *')[0]!.message, /minute field \(60\)/);
    assert.match(problems('0 24 * * *')[0]!.message, /hour field \(24\)/);
    assert.match(problems('0 0 32 * *')[0]!.message, /day of month field \(32\)/);
    assert.match(problems('0 0 * 13 *')[0]!.message, /month field \(13\)/);
    assert.match(problems('0 0 * * 8')[0]!.message, /day of week field \(8\)/);
    assert.match(problems('61 * * * * *')[0]!.message, /second field \(61\)/);
    assert.match(problems('0 x * * *')[0]!.message, /hour field \(x\)/);
  });

  it('refuses H (a random value would differ between processes)', () => {
    assert.match(problems('H * * * *')[0]!.message, /minute field .*H/);
    assert.match(problems('0 H(0-5)/2 * * *')[0]!.message, /hour field/);
    // Names with an H in them are not H.
    assert.ok('schedule' in parseSchedule('0 9 * * THU', 'UTC', 1));
  });

  it('refuses an expression that never fires', () => {
    for (const expression of ['0 0 30 2 *', '0 0 31 2,4 *', '0 0 0 31 11 *']) {
      assert.match(problems(expression)[0]!.message, /never fires/, expression);
    }
  });

  it('bounds the expression length', () => {
    const long = `${Array.from({ length: 60 }, (_, i) => i).join(',')},${'0,'.repeat(100)}0 * * * *`;
    assert.ok(long.length > 256);
    assert.match(problems(long)[0]!.message, /longer than 256/);
  });

  it('an unknown IANA zone is a timezone problem; both problems come together', () => {
    assert.deepEqual(problems('0 9 * * *', 'Mars/Olympus_Mons').map((p) => p.field), ['timezone']);
    assert.deepEqual(problems('0 9 * * *', '+01:00').map((p) => p.field), ['timezone']);
    assert.deepEqual(problems('0 9 * * *', '').map((p) => p.field), ['timezone']);
    assert.deepEqual(problems('99 * * * *', 'Nowhere/Else').map((p) => p.field).sort(), ['expression', 'timezone']);
    assert.ok('schedule' in parseSchedule('0 9 * * *', 'Asia/Kathmandu', 1));
  });

  it('refuses an expression firing more often than the shortest interval allowed', () => {
    assert.match(problems('*/2 * * * * *', 'UTC', 5)[0]!.message, /every 2 s; the shortest interval allowed is 5 s/);
    assert.ok('schedule' in parseSchedule('*/5 * * * * *', 'UTC', 5));
    assert.ok('schedule' in parseSchedule('* * * * *', 'UTC', 60));
    assert.equal(problems('* * * * *', 'UTC', 61)[0]?.field, 'expression');
    // Mostly hourly, but minutes 0 and 1 are 60 s apart: the smallest gap counts.
    assert.match(problems('0 0,1 * * * *', 'UTC', 120)[0]!.message, /every 60 s/);
  });
});

describe('cron schedules across daylight saving time', () => {
  // Europe/Berlin 2026: spring forward 29 March 02:00 CET -> 03:00 CEST (01:00 UTC);
  // fall back 25 October 03:00 CEST -> 02:00 CET (01:00 UTC): 02:00-03:00 happens twice.
  // America/New_York 2026: spring forward 8 March 02:00 -> 03:00; fall back 1 November 02:00 -> 01:00.

  it('spring forward: a daily 02:30 job fires once that day, at 03:30 (no time in the skipped hour)', () => {
    const s = schedule('30 2 * * *', 'Europe/Berlin');
    const fires = nextTimes(s, new Date('2026-03-27T12:00:00Z'), 4);
    assert.deepEqual(iso(fires), ['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
    assert.deepEqual(
      fires.map((at) => wall(at, 'Europe/Berlin')),
      ['02:30', '03:30', '02:30', '02:30'],
    );
    const ny = nextTimes(schedule('30 2 * * *', 'America/New_York'), new Date('2026-03-07T12:00:00Z'), 2);
    assert.deepEqual(iso(ny), ['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    assert.equal(wall(ny[0]!, 'America/New_York'), '03:30');
  });

  it('spring forward: a shifted time that is also a written time fires once', () => {
    const fires = firesBetween(schedule('30 2,3 * * *', 'Europe/Berlin'), '2026-03-28T12:00:00Z', '2026-03-30T12:00:00Z');
    assert.deepEqual(iso(fires), ['2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-30T01:30:00.000Z']);
  });

  it('fall back: a daily 01:30 job fires once on the repeated hour, in its first pass', () => {
    const s = schedule('30 1 * * *', 'America/New_York');
    const fires = nextTimes(s, new Date('2026-10-31T12:00:00Z'), 3);
    // 01:30 EDT (05:30 UTC); not again at 01:30 EST (06:30 UTC).
    assert.deepEqual(iso(fires), ['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z', '2026-11-03T06:30:00.000Z']);
    const berlin = firesBetween(schedule('30 2 * * *', 'Europe/Berlin'), '2026-10-24T12:00:00Z', '2026-10-26T12:00:00Z');
    assert.deepEqual(iso(berlin), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
  });

  it('fall back: a walk that starts inside the repeated hour does not offer the second pass of a time already fired', () => {
    const s = schedule('30 1 * * *', 'America/New_York');
    // 01:10 EST, the second pass: 01:30 fired at 05:30 UTC in the first pass already.
    assert.equal(nextTime(s, new Date('2026-11-01T06:10:00Z'))?.toISOString(), '2026-11-02T06:30:00.000Z');
    // The same from the fired time itself and from every minute between.
    for (let t = Date.parse('2026-11-01T05:30:00Z'); t <= Date.parse('2026-11-01T06:40:00Z'); t += 5 * 60_000) {
      assert.equal(nextTime(s, new Date(t))?.toISOString(), '2026-11-02T06:30:00.000Z', new Date(t).toISOString());
    }
    const berlin = schedule('30 2 * * *', 'Europe/Berlin');
    assert.equal(nextTime(berlin, new Date('2026-10-25T01:10:00Z'))?.toISOString(), '2026-10-26T01:30:00.000Z');
  });

  it('fall back: an hour field covering every hour fires in both passes however it is written (`*`, `0-23`, a step of 1)', () => {
    // 01:00 EDT is 05:00 UTC, 01:00 EST 06:00 UTC; the walks start before the hour and inside its second pass.
    for (const expression of ['0 * * * *', '0 0-23 * * *', '0 0-23/1 * * *', '0 */1 * * *']) {
      const s = schedule(expression, 'America/New_York');
      assert.deepEqual(iso(nextTimes(s, new Date('2026-11-01T04:30:00Z'), 3)), ['2026-11-01T05:00:00.000Z', '2026-11-01T06:00:00.000Z', '2026-11-01T07:00:00.000Z'], expression);
      assert.equal(nextTime(s, new Date('2026-11-01T05:30:00Z'))?.toISOString(), '2026-11-01T06:00:00.000Z', expression);
      assert.equal(nextTime(s, new Date('2026-11-01T06:10:00Z'))?.toISOString(), '2026-11-01T07:00:00.000Z', expression);
    }
  });

  for (const [zone, spring, fall] of [
    ['Europe/Berlin', '2026-03-29T01:00:00Z', '2026-10-25T01:00:00Z'],
    ['America/New_York', '2026-03-08T07:00:00Z', '2026-11-01T06:00:00Z'],
  ] as const) {
    for (const [expression, gapMs] of [
      ['0 * * * *', HOUR],
      ['*/15 * * * *', 15 * 60_000],
      ['*/30 * * * * *', 30_000],
    ] as const) {
      it(`${zone}: ${expression} fires at each real instant once across both transitions, none lost or doubled`, () => {
        const s = schedule(expression, zone);
        for (const transition of [spring, fall]) {
          const from = new Date(Date.parse(transition) - 3 * HOUR).toISOString();
          const to = new Date(Date.parse(transition) + 3 * HOUR).toISOString();
          const fires = firesBetween(s, from, to);
          assert.equal(fires.length, (6 * HOUR) / gapMs, `${transition}: fires in six real hours`);
          assertEvenGaps(fires, gapMs);
          // Walks started anywhere (inside the repeated hour too) give the same instants.
          for (let start = Date.parse(from); start < Date.parse(to); start += 7 * 60_000 + 13_000) {
            const expected = fires.filter((at) => at.getTime() > start).slice(0, 3);
            assert.deepEqual(iso(nextTimes(s, new Date(start), expected.length)), iso(expected), `from ${new Date(start).toISOString()}`);
          }
        }
      });
    }
  }

  it('latestTimes agrees with the forward walk across both transitions (the library walking backwards does not)', () => {
    const daily = schedule('30 2 * * *', 'Europe/Berlin');
    assert.deepEqual(iso(latestTimes(daily, new Date('2026-03-31T12:00:00Z'), 3, new Date(0))), ['2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z', '2026-03-31T00:30:00.000Z']);
    assert.deepEqual(iso(latestTimes(daily, new Date('2026-10-26T12:00:00Z'), 3, new Date(0))), ['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    // Inclusive of upTo, strictly after notBefore.
    assert.deepEqual(iso(latestTimes(daily, new Date('2026-10-26T01:30:00Z'), 5, new Date('2026-10-24T00:30:00Z'))), ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    // Every second of 02:xx: on spring-forward day those fire at 03:00-03:59 CEST, which the
    // library's backward walk skips; the listed times are still the latest ones.
    const seconds = latestTimes(schedule('* * 2 * * *', 'Europe/Berlin'), new Date('2026-03-29T12:00:00Z'), 1001, new Date(0));
    assert.equal(seconds.length, 1001);
    assert.equal(seconds[1000]!.toISOString(), '2026-03-29T01:59:59.000Z');
    assertEvenGaps(seconds, 1000);
    const hourly = schedule('0 * * * *', 'Europe/Berlin');
    const recent = latestTimes(hourly, new Date('2026-10-25T03:30:00Z'), 6, new Date(0));
    assert.equal(recent.length, 6);
    assertEvenGaps(recent, HOUR);
    assert.equal(recent[5]!.toISOString(), '2026-10-25T03:00:00.000Z');
  });
});
