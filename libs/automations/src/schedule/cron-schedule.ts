/**
 * Cron schedules with IANA time zones, on the maintained `cron-parser` library (never by hand):
 * 5 fields (minute precision) or 6 (seconds first). Pure: no clock is read here; every function
 * takes the instant it counts from.
 *
 * STUB (contract): the schedule helper implements these.
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

/**
 * The schedule of `expression` in `timezone`, or the problems: not 5 or 6 fields, a field out of
 * range, an unknown IANA zone, an expression that never fires, or one that fires more often than
 * every `minIntervalS` seconds.
 */
export function parseSchedule(expression: string, timezone: string, minIntervalS: number): { schedule: CronSchedule } | { problems: ScheduleProblem[] } {
  void expression;
  void timezone;
  void minIntervalS;
  throw new Error('not implemented');
}

/** The first `count` fire times strictly after `after`. */
export function nextTimes(schedule: CronSchedule, after: Date, count: number): Date[] {
  void schedule;
  void after;
  void count;
  throw new Error('not implemented');
}

/** The next fire time strictly after `after` (null: none, e.g. a date that never comes again). */
export function nextTime(schedule: CronSchedule, after: Date): Date | null {
  return nextTimes(schedule, after, 1)[0] ?? null;
}
