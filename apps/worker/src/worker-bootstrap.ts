import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { QUEUE_JOBS, WorkerPresence } from '#libs/queue';
import { OutboxRelay, SessionDriver, WORKER_ID } from '#libs/runtime';
import { WebhookDeliverer } from '#libs/webhooks';
import { QueueProcessors } from './queue-processors.js';
import { SweepSchedule } from './sweep-schedule.js';
import { ConsumerHealth } from './worker-health.js';

const FILES_CONCURRENCY = 4;
/** Automation timers wait on Postgres (a fire is one transaction), not on the CPU: several at once per worker. */
const AUTOMATIONS_CONCURRENCY = 8;

/**
 * Starts consuming only after the whole context is initialised, and refuses to start when a job
 * name of a queue has no handler: a job nobody can process would otherwise fail at run time.
 */
@Injectable()
export class WorkerBootstrap implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WorkerBootstrap.name);

  constructor(
    private readonly processors: QueueProcessors,
    private readonly sweeps: SweepSchedule,
    private readonly config: AppConfig,
    private readonly driver: SessionDriver,
    private readonly relay: OutboxRelay,
    private readonly presence: WorkerPresence,
    private readonly consumers: ConsumerHealth,
    private readonly webhooks: WebhookDeliverer,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const processors = this.processors.byQueue();
    for (const [queue, names] of Object.entries(QUEUE_JOBS)) {
      const processor = processors[queue];
      if (!processor) throw new Error(`queue ${queue} has no processor`);
      for (const name of names) {
        if (!(name in processor.handlers)) throw new Error(`job ${name} on queue ${queue} has no handler`);
      }
    }
    await this.sweeps.start();
    this.processors.sessions.worker.concurrency = this.config.workerConcurrency;
    // Preparations wait on file storage, not on the CPU: a few at once per worker.
    this.processors.files.worker.concurrency = FILES_CONCURRENCY;
    // Webhook attempts wait on receivers (up to WEBHOOK_TIMEOUT_MS each), not on the CPU.
    this.processors.webhooks.worker.concurrency = this.config.webhookConcurrency;
    this.processors.automations.worker.concurrency = AUTOMATIONS_CONCURRENCY;
    this.relay.start();
    this.consumers.prepare();
    for (const processor of Object.values(processors)) {
      // A consumer whose loop died leaves a process that looks alive and does nothing: exit, and let
      // the launcher or the orchestrator start a fresh one (unless this is the shutdown itself).
      processor.worker.run().catch((error: unknown) => {
        this.logger.error(`worker stopped: ${String(error)}`);
        if (!processor.worker.closing) process.exit(1);
      });
    }
    // The api's readiness counts the workers announced here (and consuming).
    this.presence.start(WORKER_ID, () => this.consumers.allRunning());
    this.logger.log(`consuming ${Object.keys(processors).join(', ')} (session concurrency ${this.config.workerConcurrency})`);
  }

  /**
   * Claims nothing more, brings every run in flight to its next boundary and releases it (another
   * worker continues it at once), then closes the consumers, while the database, Redis and queue
   * connections are still open; those close in onApplicationShutdown afterwards.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.sweeps.stop();
    await this.presence.stop();
    this.driver.stopClaiming();
    // A webhook job ends after its attempt in flight (at most WEBHOOK_TIMEOUT_MS) instead of its whole chain.
    this.webhooks.stop();
    await Promise.all([...Object.values(this.processors.byQueue()).map((processor) => processor.worker.close()), this.relay.stop()]);
  }
}
