import { Queue, Worker } from 'bullmq';
import { logErrorsQuietly } from '#libs/config';

/**
 * The Queue and Worker classes @nestjs/bullmq instantiates (BullModule.queueClass / workerClass):
 * BullMQ's own, with an error listener from construction on. BullMQ opens its Redis connections
 * from options and re-emits their errors on the queue or worker; without a listener each failed
 * reconnect prints a stack. A Redis outage is logged once per interval per queue and worker.
 */
export class QuietQueue extends (Queue as unknown as new (...args: unknown[]) => Queue) {
  constructor(...args: unknown[]) {
    super(...args);
    logErrorsQuietly(this, `queue ${String(args[0])}`);
  }
}

export class QuietWorker extends (Worker as unknown as new (...args: unknown[]) => Worker) {
  constructor(...args: unknown[]) {
    // A worker's connections block: BullMQ forces maxRetriesPerRequest to null on them, and prints a
    // warning when the options (the queue's, which @nestjs/bullmq hands down) say otherwise.
    const options = args[2] as { connection?: object } | undefined;
    if (options?.connection && !isClient(options.connection)) args[2] = { ...options, connection: { ...options.connection, maxRetriesPerRequest: null } };
    super(...args);
    logErrorsQuietly(this, `worker ${String(args[0])}`);
  }
}

/** A connection given as a client instance (not options) is used as is. */
function isClient(connection: object): boolean {
  return typeof (connection as { duplicate?: unknown }).duplicate === 'function';
}
