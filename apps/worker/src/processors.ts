import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger } from '@nestjs/common';
import { ThrottledLog } from '#libs/config';
import type { Job } from 'bullmq';
import { metrics } from '#libs/metrics';
import { AutomationScheduler, AutomationSweep } from '#libs/automations';
import { FilesSweep } from '#libs/files';
import { JOBS, type JobName, type JobPayloads, QUEUES } from '#libs/queue';
import { RetentionSweep } from '#libs/retention';
import { AttachmentPreparer, DrivePasses, RecoveryService } from '#libs/runtime';
import { SpanRetention } from '#libs/traces';
import { WebhookDeliverer, WebhookSweep } from '#libs/webhooks';

type Handlers<Names extends JobName> = { [N in Names]: (data: JobPayloads[N]) => Promise<unknown> };

/** A processor that maps each job name of its queue to a handler; the set is checked at boot. */
export abstract class JobProcessor<Names extends JobName> extends WorkerHost {
  abstract readonly handlers: Handlers<Names>;
  private readonly failures = new ThrottledLog(new Logger('Jobs'));

  async process(job: Job): Promise<unknown> {
    const handler = (this.handlers as Record<string, ((data: unknown) => Promise<unknown>) | undefined>)[job.name];
    if (!handler) throw new Error(`no handler for job ${job.name} on ${job.queueName}`);
    // Waited from its enqueue, or from its scheduled time for a delayed job (the recovery sweep's).
    metrics.jobStarted(job.queueName, ((job.processedOn ?? Date.now()) - job.timestamp - (job.delay ?? 0)) / 1000);
    try {
      return await handler(job.data);
    } catch (error) {
      // A failing job is retried by the next nudge or sweep; an outage fails every one of them,
      // so each job name is logged once per interval.
      this.failures.warn(`job ${job.name} failed: ${error instanceof Error ? error.message : String(error)}`, job.name);
      throw error;
    }
  }
}

@Processor(QUEUES.sessions, { autorun: false })
export class SessionDispatchProcessor extends JobProcessor<typeof JOBS.dispatchSession> {
  readonly handlers;

  constructor(passes: DrivePasses) {
    super();
    this.handlers = { [JOBS.dispatchSession]: ({ sessionId, takeover, readyInputId }: JobPayloads['session.dispatch']) => passes.drive(sessionId, takeover === true, readyInputId) };
  }
}

@Processor(QUEUES.maintenance, { autorun: false })
export class MaintenanceProcessor extends JobProcessor<typeof JOBS.recoverySweep | typeof JOBS.filesSweep | typeof JOBS.webhooksSweep | typeof JOBS.automationsSweep | typeof JOBS.retentionSweep> {
  readonly handlers;

  constructor(recovery: RecoveryService, files: FilesSweep, webhooks: WebhookSweep, automations: AutomationSweep, spans: SpanRetention, retention: RetentionSweep) {
    super();
    this.handlers = {
      // Span retention rides on the recovery sweep's tick: it paces itself (SpanRetention) and never fails the sweep.
      [JOBS.recoverySweep]: async () => ({ ...(await recovery.sweep()), spansDeleted: await spans.run() }),
      [JOBS.filesSweep]: () => files.run(),
      [JOBS.webhooksSweep]: () => webhooks.run(),
      [JOBS.automationsSweep]: () => automations.run(),
      [JOBS.retentionSweep]: () => retention.run(),
    };
  }
}

/** Automations' timers: a scheduled time has come; the scheduler decides in Postgres what fires. */
@Processor(QUEUES.automations, { autorun: false })
export class AutomationsProcessor extends JobProcessor<typeof JOBS.fireAutomation> {
  readonly handlers;

  constructor(scheduler: AutomationScheduler) {
    super();
    this.handlers = { [JOBS.fireAutomation]: ({ automationId, at }: JobPayloads['automation.fire']) => scheduler.runDue(automationId, at) };
  }
}

@Processor(QUEUES.webhooks, { autorun: false })
export class WebhooksProcessor extends JobProcessor<typeof JOBS.deliverWebhooks> {
  readonly handlers;

  constructor(deliverer: WebhookDeliverer) {
    super();
    this.handlers = { [JOBS.deliverWebhooks]: ({ endpointId, chain }: JobPayloads['webhooks.deliver']) => deliverer.deliverChain(endpointId, chain) };
  }
}

@Processor(QUEUES.files, { autorun: false })
export class FilesProcessor extends JobProcessor<typeof JOBS.prepareAttachments> {
  readonly handlers;

  constructor(preparer: AttachmentPreparer) {
    super();
    this.handlers = { [JOBS.prepareAttachments]: ({ inputId }: JobPayloads['attachments.prepare']) => preparer.prepare(inputId) };
  }
}
