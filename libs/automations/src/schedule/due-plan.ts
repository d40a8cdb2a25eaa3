import type { CatchUpPolicy } from '../automation.types.js';
import type { CronSchedule } from './cron-schedule.js';

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
  void input;
  throw new Error('not implemented');
}
