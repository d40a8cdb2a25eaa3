import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { ThrottledLog } from '#libs/config';
import { metrics } from '#libs/metrics';
import { JOBS, type JobPayloads, QUEUES } from '#libs/queue';

type FireJob = JobPayloads['automation.fire'];

/**
 * The job id of an automation's timer for one scheduled time: arming the same time twice is one
 * job. (BullMQ refuses custom ids with one `:` in them, so `@` joins the two parts.) A re-arm by a
 * timer that woke early (`clock`: the database's time when it woke) has an id of its own: under the
 * plain id BullMQ would ignore the add, the running job being that id, and the time would be left
 * to the sweep.
 */
export function timerJobId(automationId: string, at: Date, clock?: Date): string {
  const id = `${automationId}@${at.getTime()}`;
  return clock ? `${id}#${clock.getTime()}` : id;
}

/**
 * An automation's timer: a BullMQ delayed job that wakes a worker at the next scheduled time. Only a
 * timer: whether the time fires is decided in Postgres (the firer's guarded transaction), and a timer
 * that is lost (Redis restarted, the add failed) is what the automations sweep finds. So arming never
 * throws; a failure is logged and counted.
 */
@Injectable()
export class AutomationTimers {
  private readonly log = new Logger(AutomationTimers.name);
  private readonly failures = new ThrottledLog(this.log);

  constructor(@InjectQueue(QUEUES.automations) private readonly queue: Queue<FireJob>) {}

  /**
   * `clock`, from a timer that woke early: the database's time then. The delay is counted on it
   * (this host's clock is what woke the timer early) and the job gets a distinct id.
   */
  async arm(automationId: string, at: Date, clock?: Date): Promise<void> {
    const ms = at.getTime();
    const now = clock?.getTime() ?? Date.now();
    try {
      await this.queue.add(
        JOBS.fireAutomation,
        { automationId, at: ms },
        // A job left failed is kept a while for the operator; a completed one goes (a later arm of the
        // same time adds a new job, which finds the time taken and does nothing).
        { jobId: timerJobId(automationId, at, clock), delay: Math.max(0, ms - now), removeOnComplete: true, removeOnFail: 100 },
      );
      this.log.debug(`armed automation ${automationId} for ${at.toISOString()}`);
    } catch (error) {
      metrics.redisError('queue');
      this.failures.warn(`automation timers are failing (the automations sweep fires what they miss): ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}
