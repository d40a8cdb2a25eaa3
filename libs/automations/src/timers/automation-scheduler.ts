import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { metrics } from '#libs/metrics';
import type { AutomationRecord } from '../automation.types.js';
import { AutomationFirer } from '../firing/automation-firer.js';
import { type DuePlan, planDue } from '../schedule/due-plan.js';
import { toAutomationDto } from '../views/automation-view.js';
import { AutomationTimers } from './automation-timers.js';
import { type AfterMissed, DueStore } from './due-store.js';

/** Missed times listed one by one at most (beyond, they are jumped over, uncounted). */
const MAX_ENUMERATED = 1_000;
/**
 * A timer that wakes this much before its time (its delay was counted on this host's clock, the
 * time is the database's) waits the difference once rather than leaving the time to the sweep.
 */
const EARLY_WAIT_MS = 2_000;

/** What one runDue did: times fired, times recorded as missed, or `stale` (another worker had it). */
export interface RunDueResult {
  fired: number;
  skipped: number;
  stale: boolean;
}

const NOTHING: RunDueResult = { fired: 0, skipped: 0, stale: false };

/**
 * Fires what is due of one automation: reads it and the database's clock, plans the due times
 * (`planDue`: the catch_up policy and the misfire grace), records the missed ones as skipped, fires
 * the planned ones through the firer, then arms the timer for the next time. Any number of workers
 * may run this for the same automation at once (a timer and the sweep, two timers after a
 * restart): the missed times' transaction and each fire are guarded on next_run_at under the
 * automation's row lock, so the loser finds its time taken (stale) and writes nothing.
 */
@Injectable()
export class AutomationScheduler {
  private readonly log = new Logger(AutomationScheduler.name);

  constructor(
    private readonly store: DueStore,
    private readonly firer: AutomationFirer,
    private readonly timers: AutomationTimers,
    private readonly config: AppConfig,
  ) {}

  /** `timerAt`: the time (Unix ms) of the timer that woke this run; none from the sweep. */
  async runDue(automationId: string, timerAt?: number): Promise<RunDueResult> {
    let read = await this.store.read(automationId);
    let early = read ? earlyBy(read.automation, read.now) : null;
    if (read && early !== null && early > 0 && early <= EARLY_WAIT_MS) {
      await sleep(early);
      read = await this.store.read(automationId);
      early = read ? earlyBy(read.automation, read.now) : null;
    }
    if (!read || early === null) return NOTHING;
    const { automation, now } = read;
    const expected = automation.nextRunAt!;
    if (early > 0) {
      // Woken for a time that moved later (an update of the schedule): the timer of the new time.
      // Woken too early for this very time (this host's clock ahead of the database's): a timer of
      // its own, counted on the database's clock (the running job holds the plain id).
      await this.timers.arm(automationId, expected, timerAt === expected.getTime() ? now : undefined);
      return NOTHING;
    }
    const plan = this.plan(automation, now);
    if (automation.type === 'periodic' && !plan.next) {
      // parseSchedule refuses an expression that never fires, and a cron line's times repeat, so a
      // periodic schedule always has a next time. Thrown, not written: the sweep logs it and backs off.
      throw new Error(`automation ${automationId}: its schedule gave no time after ${now.toISOString()}`);
    }
    const first = plan.fire[0]?.at ?? null;
    let skipped = 0;
    if (plan.skip.length > 0 || plan.uncounted > 0 || first?.getTime() !== expected.getTime()) {
      const recorded = await this.store.recordMissed(automationId, expected, plan.skip, afterMissed(first ?? plan.next), toAutomationDto(automation));
      if (recorded === null) return { ...NOTHING, stale: true };
      skipped = recorded;
      if (skipped > 0) metrics.automationInvocation('automation', 'skipped', 'missed', null, skipped);
      if (plan.uncounted > 0) this.log.warn(`automation ${automationId}: ${plan.uncounted} missed times beyond ${MAX_ENUMERATED} jumped over unrecorded`);
      else if (skipped > 0) this.log.debug(`automation ${automationId}: ${skipped} missed times recorded as skipped`);
    }
    let fired = 0;
    for (const [i, { at, reason }] of plan.fire.entries()) {
      const next = plan.fire[i + 1]?.at ?? plan.next;
      const outcome = await this.firer.fireScheduled({ automationId, scheduledAt: at, reason, next });
      if (outcome.kind === 'stale') return { fired, skipped, stale: true };
      fired++;
    }
    if (plan.next) await this.timers.arm(automationId, plan.next);
    return { fired, skipped, stale: false };
  }

  private plan(automation: AutomationRecord, now: Date): DuePlan {
    return planDue({
      nextRunAt: automation.nextRunAt!,
      now,
      schedule: automation.type === 'periodic' ? { expression: automation.expression!, timezone: automation.timezone! } : null,
      catchUp: automation.catchUp,
      graceMs: this.config.automationMisfireGraceS * 1000,
      maxCatchUp: this.config.automationCatchUpMax,
      maxEnumerated: MAX_ENUMERATED,
    });
  }
}

/** How long before its next time the automation is (<= 0: due); null when it is not active. */
function earlyBy(automation: AutomationRecord, now: Date): number | null {
  if (automation.status !== 'active' || !automation.nextRunAt) return null;
  return automation.nextRunAt.getTime() - now.getTime();
}

/**
 * next_run_at after the missed times: the first time to fire, else the next one. With neither, a
 * once automation has had its only time and completes (a periodic one always has a next time).
 */
function afterMissed(next: Date | null): AfterMissed {
  return next ? { nextRunAt: next } : { end: 'completed' };
}
