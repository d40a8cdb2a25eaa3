import type { CatchUpPolicy } from '../automation.types.js';
import { type CronSchedule, latestTimes, nextTime, nextTimes } from './cron-schedule.js';

/**
 * What is due for an automation whose `next_run_at` has passed: which scheduled times fire, which
 * are recorded as skipped (missed), and the next time after them. Pure.
 *
 * A scheduled time is on time while `now - time <= graceMs`; older ones are missed, and the
 * catch_up policy decides: `none` fires none of them, `latest` the most recent one, `all` each (at
 * most `maxCatchUp`, the oldest skipped). At most `maxEnumerated` missed times are listed one by
 * one; beyond that they are jumped over and counted in `uncounted`.
 *
 * STUB (contract): the schedule helper implements this.
 */
export interface DuePlan {
  /** Times recorded as skipped with reason `missed`, oldest first. */
  skip: Date[];
  /** Times to fire, oldest first, each with its reason (`scheduled` on time, `catch_up` late). */
  fire: { at: Date; reason: 'scheduled' | 'catch_up' }[];
  /** Missed times neither fired nor recorded (beyond `maxEnumerated`). */
  uncounted: number;
  /** The next scheduled time after everything planned (null for a `once` schedule: it completes). */
  next: Date | null;
}

export interface DueInput {
  /** `next_run_at`: the first time not yet recorded. */
  nextRunAt: Date;
  now: Date;
  /** null for a `once` automation (its only time is nextRunAt). */
  schedule: CronSchedule | null;
  catchUp: CatchUpPolicy;
  graceMs: number;
  maxCatchUp: number;
  maxEnumerated: number;
}

export function planDue(input: DueInput): DuePlan {
  const { nextRunAt, now, schedule } = input;
  if (nextRunAt.getTime() > now.getTime()) return { skip: [], fire: [], uncounted: 0, next: nextRunAt };
  const { due, uncounted } = schedule ? dueTimes(schedule, nextRunAt, now, Math.max(0, input.maxEnumerated)) : { due: [nextRunAt], uncounted: 0 };
  const latest = due[due.length - 1]!;
  const missed = due.slice(0, -1);
  const onTime = now.getTime() - latest.getTime() <= input.graceMs;
  const next = schedule ? nextTime(schedule, now) : null;
  switch (input.catchUp) {
    case 'none':
      return onTime ? { skip: missed, fire: [{ at: latest, reason: 'scheduled' }], uncounted, next } : { skip: due, fire: [], uncounted, next };
    case 'latest': {
      const reason = onTime && missed.length === 0 && uncounted === 0 ? 'scheduled' : 'catch_up';
      return { skip: missed, fire: [{ at: latest, reason }], uncounted, next };
    }
    case 'all': {
      const firing = due.slice(-Math.max(1, input.maxCatchUp));
      const fire = firing.map((at) => ({ at, reason: at === latest && onTime ? ('scheduled' as const) : ('catch_up' as const) }));
      return { skip: due.slice(0, due.length - firing.length), fire, uncounted, next };
    }
  }
}

/** The due times (oldest first, at most maxEnumerated + 1) and how many older ones were jumped over. */
function dueTimes(schedule: CronSchedule, nextRunAt: Date, now: Date, maxEnumerated: number): { due: Date[]; uncounted: number } {
  const limit = maxEnumerated + 1;
  const forward = [nextRunAt, ...nextTimes(schedule, nextRunAt, limit)];
  const within = forward.filter((at) => at.getTime() <= now.getTime());
  if (within.length < forward.length || forward.length < limit + 1) return { due: within.slice(-limit), uncounted: Math.max(0, within.length - limit) };
  // More than `limit` are due: list the most recent ones, jump over the older ones.
  const last = forward[forward.length - 1]!;
  const recent = latestTimes(schedule, now, limit, last);
  if (recent.length < limit) {
    // Every time after `last` is listed: the count is exact.
    const all = [...forward, ...recent];
    return { due: all.slice(-limit), uncounted: all.length - limit };
  }
  const meanGapMs = (last.getTime() - nextRunAt.getTime()) / (forward.length - 1);
  const estimate = meanGapMs > 0 ? Math.round((recent[0]!.getTime() - nextRunAt.getTime()) / meanGapMs) : 0;
  return { due: recent, uncounted: Math.max(forward.length, estimate) };
}
