import { Injectable } from '@nestjs/common';
import { QUEUES } from '#libs/queue';
import { AutomationsProcessor, FilesProcessor, type JobProcessor, MaintenanceProcessor, SessionDispatchProcessor, WebhooksProcessor } from './processors.js';

/** The worker's consumers, one per queue: what WorkerBootstrap checks, starts and closes as one. */
@Injectable()
export class QueueProcessors {
  constructor(
    readonly sessions: SessionDispatchProcessor,
    readonly maintenance: MaintenanceProcessor,
    readonly files: FilesProcessor,
    readonly webhooks: WebhooksProcessor,
    readonly automations: AutomationsProcessor,
  ) {}

  /** Each queue's processor, by queue name. */
  byQueue(): Record<string, JobProcessor<never>> {
    return {
      [QUEUES.sessions]: this.sessions as JobProcessor<never>,
      [QUEUES.maintenance]: this.maintenance as JobProcessor<never>,
      [QUEUES.files]: this.files as JobProcessor<never>,
      [QUEUES.webhooks]: this.webhooks as JobProcessor<never>,
      [QUEUES.automations]: this.automations as JobProcessor<never>,
    };
  }
}
