import { Injectable, Logger } from '@nestjs/common';
import { AppConfig, ThrottledLog } from '#libs/config';
import { metrics } from '#libs/metrics';
import { AutomationScheduler } from './automation-scheduler.js';
import { DueStore } from './due-store.js';

/** Due automations one sweep runs at most (the oldest first); the next sweep takes the rest. */
export const SWEEP_BATCH = 200;
/**
 * How overdue a time is before the sweep takes it: a time whose timer is firing right now is the
 * timer's (the sweep racing it would only do the work twice and lose).
 */
export const SWEEP_LAG_MS = 2_000;
/** Automations whose runs keep failing that one process backs off at most (bounded memory: beyond, the oldest is forgotten). */
export const MAX_BACKED_OFF = 1_000;
/** The longest back-off, in sweeps (a failing automation is still retried about every 64 sweeps). */
export const MAX_BACKOFF_SWEEPS = 64;
/** Every this many sweeps, one round of invocation retention (the idle sweep's other runs are one statement). */
export const PRUNE_EVERY_SWEEPS = 6;
/** Automations one retention round looks at, and the most invocation rows it deletes. */
export const PRUNE_AUTOMATIONS = 50;
export const PRUNE_BATCH = 500;

const FIRST_ID = '00000000-0000-0000-0000-000000000000';

/**
 * The automations backstop (the maintenance queue, every AUTOMATION_SWEEP_MS): runs what is due of
 * every active automation whose time passed with no timer to fire it (Redis lost its delayed jobs,
 * no worker was up, an arm failed), per its catch_up policy, and sets the gauges. Nothing committed
 * waits on Redis to fire: only on this sweep. A sweep racing a timer for the same time is safe
 * (the scheduler's guards make the loser stale). It also keeps invocations to
 * AUTOMATION_INVOCATIONS_KEPT per automation, a few automations a round.
 */
@Injectable()
export class AutomationSweep {
  private readonly failures = new ThrottledLog(new Logger(AutomationSweep.name));
  private sweeps = 0;
  /** id → its consecutive failures and the first sweep that runs it again (insertion order: the oldest first). */
  private readonly backoff = new Map<string, { failures: number; until: number }>();
  private pruneAfter = FIRST_ID;

  constructor(
    private readonly store: DueStore,
    private readonly scheduler: AutomationScheduler,
    private readonly config: AppConfig,
  ) {}

  async run(): Promise<{ due: number; fired: number; skipped: number; pruned: number }> {
    const sweep = ++this.sweeps;
    const skip = [...this.backoff].filter(([, entry]) => entry.until > sweep).map(([id]) => id);
    const read = await this.store.sweepRead(SWEEP_BATCH, SWEEP_LAG_MS, skip);
    metrics.automationsCounted(read.active, read.due);
    let fired = 0;
    let skipped = 0;
    for (const id of read.ids) {
      try {
        const result = await this.scheduler.runDue(id);
        fired += result.fired;
        skipped += result.skipped;
        this.backoff.delete(id);
      } catch (error) {
        // One automation failing (its target's session locked long, a bad row) must not stop the
        // others, nor keep the head of every later sweep: it waits 1, 2, 4 ... sweeps.
        this.backOff(id, sweep);
        this.failures.warn(`automation ${id} could not be fired by the sweep: ${error instanceof Error ? error.message : String(error)}`, id);
      }
    }
    const pruned = sweep % PRUNE_EVERY_SWEEPS === 0 ? await this.prune() : 0;
    return { due: read.ids.length, fired, skipped, pruned };
  }

  private backOff(id: string, sweep: number): void {
    const failures = (this.backoff.get(id)?.failures ?? 0) + 1;
    this.backoff.delete(id);
    if (this.backoff.size >= MAX_BACKED_OFF) this.backoff.delete(this.backoff.keys().next().value!);
    // Left out of the next 1, 2, 4 ... sweeps.
    this.backoff.set(id, { failures, until: sweep + 1 + Math.min(MAX_BACKOFF_SWEEPS, 2 ** (failures - 1)) });
  }

  /** One round of invocation retention, the automations after the last round's (from the first again past the end). */
  private async prune(): Promise<number> {
    const { last, deleted } = await this.store.pruneInvocations(this.pruneAfter, PRUNE_AUTOMATIONS, this.config.automationInvocationsKept, PRUNE_BATCH);
    this.pruneAfter = last ?? FIRST_ID;
    return deleted;
  }
}
