import { CronExpressionParser } from 'cron-parser';

/**
 * Cron schedules with IANA time zones, on the maintained `cron-parser` library (never by hand):
 * 5 fields (minute precision) or 6 (seconds first). Pure: no clock is read here; every function
 * takes the instant it counts from.
 *
 * Daylight saving time (the rules the unit tests hold):
 * - Spring forward: local times in the skipped hour do not exist. A time written in it fires once
 *   that day at the same distance after the jump (02:30 in Europe/Berlin fires at 03:30 CEST, the
 *   reading RFC 5545 gives such a time), and when that instant is also a written time it fires once.
 *   No fire is placed at a wall time that does not exist.
 * - Fall back: a job at listed hours fires once, in the first pass of the repeated hour (01:30 in
 *   America/New_York fires at 01:30 EDT, not again at 01:30 EST); a job on every hour fires at each
 *   real instant of both passes, as its interval says, however its hour field is written (`*`,
 *   `0-23`, a step of 1: the same fires; only `*` skips walkStart's moved start, a saving).
 * - Every fire time is a real instant, each at most once, ascending, and the same instants whatever
 *   instant the walk starts from (the library's walk remembers the transition it crossed, so a walk
 *   never starts inside a repeated hour: see `walkStart`).
 */

/** A parsed, validated schedule. */
export interface CronSchedule {
  expression: string;
  timezone: string;
}

/** Why an expression or zone is refused, as field errors (`expression` / `timezone`). */
export interface ScheduleProblem {
  field: 'expression' | 'timezone';
  message: string;
}

/** The longest expression accepted (a cron line is short; this bounds the parser's work). */
export const MAX_EXPRESSION_LENGTH = 256;
/** How many upcoming fires the shortest-interval check looks at (a bounded look, not a proof). */
export const INTERVAL_CHECK_FIRES = 50;

const FIELD_NAMES_6 = ['second', 'minute', 'hour', 'day of month', 'month', 'day of week'] as const;
const FIELD_NAMES_5 = FIELD_NAMES_6.slice(1);
/** Where the shortest-interval and never-fires checks start: a fixed instant keeps parsing pure. */
const CHECK_FROM = new Date(Date.UTC(2026, 0, 1));
/** How far the shortest-interval check walks past the first fire. */
const CHECK_SPAN_MS = 400 * 86_400_000;
/** How far back a fall-back is looked for (no zone turns its clocks back by more). */
const REPEAT_WINDOW_MS = 3 * 3_600_000;

/**
 * The schedule of `expression` in `timezone`, or the problems: not 5 or 6 fields, a field out of
 * range, an unknown IANA zone, an expression that never fires, or one that fires more often than
 * every `minIntervalS` seconds.
 */
export function parseSchedule(expression: string, timezone: string, minIntervalS: number): { schedule: CronSchedule } | { problems: ScheduleProblem[] } {
  const problems: ScheduleProblem[] = [];
  const zoneProblem = checkZone(timezone);
  if (zoneProblem) problems.push({ field: 'timezone', message: zoneProblem });
  const exprProblem = checkExpression(expression);
  if (exprProblem) problems.push({ field: 'expression', message: exprProblem });
  if (problems.length > 0) return { problems };
  const schedule = { expression: expression.trim(), timezone };
  const upcoming = checkedFires(schedule);
  if (upcoming.length === 0) return { problems: [{ field: 'expression', message: 'the expression never fires (no such date)' }] };
  let shortestMs = Infinity;
  for (let i = 1; i < upcoming.length; i += 1) shortestMs = Math.min(shortestMs, upcoming[i]!.getTime() - upcoming[i - 1]!.getTime());
  if (shortestMs < minIntervalS * 1000) {
    return { problems: [{ field: 'expression', message: `the expression fires every ${shortestMs / 1000} s; the shortest interval allowed is ${minIntervalS} s` }] };
  }
  return { schedule };
}

/**
 * The fires the shortest-interval check looks at: the first INTERVAL_CHECK_FIRES, or fewer when they
 * span more than a year (a year holds every pattern of a cron line but the leap day's, and the
 * times of one day come one after another: a short gap shows in the first year it fires). The
 * year's bound keeps a rare expression (`0 0 29 2 *`) from walking two centuries.
 */
function checkedFires(schedule: CronSchedule): Date[] {
  const out: Date[] = [];
  walk(schedule, CHECK_FROM, (at) => {
    out.push(at);
    return out.length < INTERVAL_CHECK_FIRES && at.getTime() - out[0]!.getTime() < CHECK_SPAN_MS;
  });
  return out;
}

/** The first `count` fire times strictly after `after`, ascending. */
export function nextTimes(schedule: CronSchedule, after: Date, count: number): Date[] {
  const out: Date[] = [];
  if (count <= 0) return out;
  walk(schedule, after, (at) => {
    out.push(at);
    return out.length < count;
  });
  return out;
}

/** The fire times in (after, upTo], ascending, at most `max` (the walk stops at upTo: linear in what it returns). */
export function timesBetween(schedule: CronSchedule, after: Date, upTo: Date, max: number): Date[] {
  const out: Date[] = [];
  if (max <= 0 || after.getTime() >= upTo.getTime()) return out;
  walk(schedule, after, (at) => {
    if (at.getTime() > upTo.getTime()) return false;
    out.push(at);
    return out.length < max;
  });
  return out;
}

/** The next fire time strictly after `after` (null: none, e.g. a date that never comes again). */
export function nextTime(schedule: CronSchedule, after: Date): Date | null {
  return nextTimes(schedule, after, 1)[0] ?? null;
}

/**
 * The last `count` fire times at or before `upTo`, ascending, all strictly after `notBefore`.
 * The library's backward walk does not keep to the forward walk's daylight-saving rules (it skips
 * a shifted spring-forward time and returns both passes of a repeated hour), so it only finds where
 * to start; the times themselves come from the forward walk.
 */
export function latestTimes(schedule: CronSchedule, upTo: Date, count: number, notBefore: Date): Date[] {
  if (count <= 0) return [];
  let back;
  try {
    back = CronExpressionParser.parse(schedule.expression, { tz: schedule.timezone, currentDate: new Date(upTo.getTime() + 1) });
  } catch {
    return [];
  }
  let start = upTo.getTime();
  let ring: Date[] = [];
  // A backward step may return both passes of a repeated hour, so `count` steps can fall short of
  // `count` forward times: a short ring steps further back (a few rounds; notBefore ends it).
  for (let round = 0; round < 4 && ring.length < count && start > notBefore.getTime(); round += 1) {
    for (let i = 0; i < count && start > notBefore.getTime(); i += 1) {
      try {
        start = Math.max(notBefore.getTime(), back.prev().getTime() - 1);
      } catch {
        start = notBefore.getTime();
      }
    }
    ring = ringUpTo(schedule, new Date(start), upTo, count);
  }
  return ring;
}

/** The last `count` fire times in (from, upTo], by the forward walk (bounded: see maxSteps). */
function ringUpTo(schedule: CronSchedule, from: Date, upTo: Date, count: number): Date[] {
  // Where the backward steps skipped a spring-forward hour whose times the forward walk shifts past
  // the jump, the forward walk sees those too: at most an hour of fires (one a second at most).
  const maxSteps = 2 * count + 3_600 + 100;
  const seen: Date[] = [];
  walk(schedule, from, (at) => {
    if (at.getTime() > upTo.getTime()) return false;
    seen.push(at);
    return seen.length < maxSteps;
  });
  return seen.slice(-count);
}

/**
 * Walks the fire times strictly after `after`, ascending and each once, while `visit` says go on.
 * Bounded by the caller (visit returns false) and by the library (it throws past its loop limit,
 * read here as "no more times").
 */
function walk(schedule: CronSchedule, after: Date, visit: (at: Date) => boolean): void {
  const from = walkStart(schedule, after);
  let it;
  try {
    it = CronExpressionParser.parse(schedule.expression, { tz: schedule.timezone, currentDate: from });
  } catch {
    return;
  }
  let last = after.getTime();
  // The extra steps are the fires between a moved start and `after` (one repeated hour at most).
  for (;;) {
    let at: number;
    try {
      at = it.next().getTime();
    } catch {
      return;
    }
    // Equal instants (a shifted spring-forward time that is also written) and times before `after`
    // (a start moved back) are not fires of this walk.
    if (at <= last) continue;
    last = at;
    if (!visit(new Date(at))) return;
  }
}

/**
 * Where the library's forward walk starts to list the times after `after`: `after` itself, unless
 * `after` is in the second pass of a repeated (fall-back) hour. Started there, the library offers
 * the second pass of a time it gave in the first (a daily 01:30 job twice), so such a walk starts at
 * the same wall time in the first pass and drops the times up to `after`. A job on every hour fires
 * at each real instant of both passes anyway, so it needs no moved start (and per-second jobs do
 * not walk an hour of fires for each next time).
 */
function walkStart(schedule: CronSchedule, after: Date): Date {
  const fields = schedule.expression.trim().split(/\s+/);
  const hour = fields[fields.length === 6 ? 2 : 1];
  if (hour === '*' || hour === '?') return after;
  const now = offsetMinutes(schedule.timezone, after);
  const before = offsetMinutes(schedule.timezone, new Date(after.getTime() - REPEAT_WINDOW_MS));
  if (before <= now) return after;
  const twin = new Date(after.getTime() - (before - now) * 60_000);
  return offsetMinutes(schedule.timezone, twin) > now ? twin : after;
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset at `at`, in minutes (GMT+01:00 → 60). */
function offsetMinutes(timezone: string, at: Date): number {
  let format = offsetFormats.get(timezone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, timeZoneName: 'longOffset' });
    if (offsetFormats.size < 1_000) offsetFormats.set(timezone, format);
  }
  const name = format.formatToParts(at).find((part) => part.type === 'timeZoneName')?.value ?? 'GMT';
  const match = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
  if (!match) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3]);
  return match[1] === '-' ? -minutes : minutes;
}

function checkZone(timezone: string): string | null {
  if (typeof timezone !== 'string' || timezone.length === 0 || timezone.length > 64) return 'an IANA time zone name is required (e.g. Europe/Berlin, UTC)';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    return `unknown time zone ${JSON.stringify(timezone)}: use an IANA zone name (e.g. Europe/Berlin, UTC)`;
  }
  try {
    CronExpressionParser.parse('0 0 * * *', { tz: timezone, currentDate: CHECK_FROM }).next();
  } catch {
    return `time zone ${JSON.stringify(timezone)} is not supported: use an IANA zone name (e.g. Europe/Berlin, UTC)`;
  }
  return null;
}

/** The expression's first problem, naming the cron field at fault; null when it parses and fires. */
function checkExpression(expression: string): string | null {
  if (typeof expression !== 'string' || expression.trim().length === 0) return 'a cron expression is required (5 fields, or 6 with seconds first)';
  if (expression.length > MAX_EXPRESSION_LENGTH) return `the expression is longer than ${MAX_EXPRESSION_LENGTH} characters`;
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    return `a cron expression has 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first); got ${fields.length}`;
  }
  const names = fields.length === 6 ? FIELD_NAMES_6 : FIELD_NAMES_5;
  for (let i = 0; i < fields.length; i += 1) {
    const field = fields[i]!;
    // `H` (the library's random value) would differ between processes: a schedule must be one set of times.
    if (field.split(/[,/-]/).some((token) => /^H/i.test(token))) return `the ${names[i]} field (${field}): H (a random value) is not supported`;
    const alone = fields.map((value, j) => (j === i ? value : j === 0 && fields.length === 6 ? '0' : '*')).join(' ');
    try {
      CronExpressionParser.parse(alone, { currentDate: CHECK_FROM });
    } catch (error) {
      return `the ${names[i]} field (${field}): ${(error as Error).message}`;
    }
  }
  try {
    CronExpressionParser.parse(expression.trim(), { currentDate: CHECK_FROM }).next();
  } catch {
    return 'the expression never fires (no such date)';
  }
  return null;
}
