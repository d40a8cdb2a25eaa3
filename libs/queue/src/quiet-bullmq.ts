import { type Job, Queue, Worker } from 'bullmq';
import { logErrorsQuietly } from '#libs/config';
import { LeanPolling } from './lean-polling.js';

/**
 * The Queue and Worker classes @nestjs/bullmq instantiates (BullModule.queueClass / workerClass):
 * BullMQ's own, with an error listener from construction on. BullMQ opens its Redis connections
 * from options and re-emits their errors on the queue or worker; without a listener each failed
 * reconnect prints a stack. A Redis outage is logged once per interval per queue and worker.
 * Workers also poll less per job than BullMQ's loop does by itself (lean-polling.ts).
 */
export class QuietQueue extends (Queue as unknown as new (...args: unknown[]) => Queue) {
  constructor(...args: unknown[]) {
    super(...args);
    logErrorsQuietly(this, `queue ${String(args[0])}`);
  }
}

export class QuietWorker extends (Worker as unknown as new (...args: unknown[]) => Worker) {
  private readonly polling = new LeanPolling();

  constructor(...args: unknown[]) {
    // A worker's connections block: BullMQ forces maxRetriesPerRequest to null on them, and prints a
    // warning when the options (the queue's, which @nestjs/bullmq hands down) say otherwise.
    const options = args[2] as { connection?: object } | undefined;
    if (options?.connection && !isClient(options.connection)) args[2] = { ...options, connection: { ...options.connection, maxRetriesPerRequest: null } };
    super(...args);
    logErrorsQuietly(this, `worker ${String(args[0])}`);
  }

  /** Polls less per job (lean-polling.ts): no fetch of the next job within the finishing script. */
  override processJob(job: Job, token: string): ReturnType<Worker['processJob']> {
    return super.processJob(job, token, this.polling.fetchNext);
  }

  /**
   * The ask right after a job was taken is answered "nothing waiting" without Redis, the way
   * BullMQ answers an empty queue (the loop then blocks on the marker that the take re-armed).
   */
  // BullMQ types both as resolving to a Job; they resolve to undefined when no job was taken.
  protected override async moveToActive(token: string, name?: string): Promise<Job> {
    if (!this.polling.shouldAsk()) return this.nextJobFromJobData(undefined, undefined, token);
    const job = await super.moveToActive(token, name);
    this.polling.took(job);
    return job;
  }

  /** Called as a blocking wait on the marker begins: whatever ask follows it goes to Redis. */
  protected override getBlockTimeout(blockUntil: number): number {
    this.polling.waited();
    return super.getBlockTimeout(blockUntil);
  }
}

/** A connection given as a client instance (not options) is used as is. */
function isClient(connection: object): boolean {
  return typeof (connection as { duplicate?: unknown }).duplicate === 'function';
}
