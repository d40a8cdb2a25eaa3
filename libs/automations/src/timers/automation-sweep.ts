import { Injectable, Logger } from '@nestjs/common';
import { ThrottledLog } from '#libs/config';
import { metrics } from '#libs/metrics';
import { AutomationScheduler } from './automation-scheduler.js';
import { DueStore } from './due-store.js';

/** Due automations one sweep runs at most (the oldest first); the next sweep takes the rest. */
export const SWEEP_BATCH = 200;

/**
 * The automations backstop (the maintenance queue, every AUTOMATION_SWEEP_MS): runs what is due of
 * every active automation whose time passed with no timer to fire it (Redis lost its delayed jobs,
 * no worker was up, an arm failed), per its catch_up policy, and sets the gauges. Nothing committed
 * waits on Redis to fire: only on this sweep. A sweep racing a timer for the same time is safe
 * (the scheduler's guards make the loser stale).
 */
@Injectable()
export class AutomationSweep {
  private readonly failures = new ThrottledLog(new Logger(AutomationSweep.name));

  constructor(
    private readonly store: DueStore,
    private readonly scheduler: AutomationScheduler,
  ) {}

  async run(): Promise<{ due: number; fired: number; skipped: number }> {
    const counts = await this.store.counts();
    metrics.automationsCounted(counts.active, counts.due);
    const due = await this.store.dueIds(SWEEP_BATCH);
    let fired = 0;
    let skipped = 0;
    for (const id of due) {
      try {
        const result = await this.scheduler.runDue(id);
        fired += result.fired;
        skipped += result.skipped;
      } catch (error) {
        // One automation failing (its target's session locked long, a bad row) must not stop the others.
        this.failures.warn(`automation ${id} could not be fired by the sweep: ${error instanceof Error ? error.message : String(error)}`, id);
      }
    }
    return { due: due.length, fired, skipped };
  }
}
