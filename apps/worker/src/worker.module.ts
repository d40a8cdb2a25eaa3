import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AutomationsModule } from '#libs/automations';
import { ConfigModule, loggingModule } from '#libs/config';
import { DatabaseModule } from '#libs/database';
import { EnvironmentsModule } from '#libs/environments';
import { FilesModule } from '#libs/files';
import { MetricsModule } from '#libs/metrics';
import { QueueModule } from '#libs/queue';
import { RetentionModule } from '#libs/retention';
import { RuntimeModule } from '#libs/runtime';
import { TracesModule } from '#libs/traces';
import { WebhookDeliveryModule } from '#libs/webhooks';
import { AutomationsProcessor, FilesProcessor, MaintenanceProcessor, SessionDispatchProcessor, WebhooksProcessor } from './processors.js';
import { QueueProcessors } from './queue-processors.js';
import { SweepSchedule } from './sweep-schedule.js';
import { WorkerBootstrap } from './worker-bootstrap.js';
import { ConsumerHealth, WorkerHealth } from './worker-health.js';

/** The shared core minus the HTTP API: runtime, queues, database. */
@Module({
  imports: [loggingModule('worker'), ConfigModule, MetricsModule.forRoot('worker'), DatabaseModule, QueueModule, FilesModule, EnvironmentsModule, RuntimeModule, WebhookDeliveryModule, AutomationsModule, TracesModule, RetentionModule, TerminusModule.forRoot({ logger: false })],
  providers: [SessionDispatchProcessor, MaintenanceProcessor, FilesProcessor, WebhooksProcessor, AutomationsProcessor, QueueProcessors, SweepSchedule, WorkerBootstrap, ConsumerHealth, WorkerHealth],
})
export class WorkerModule {}
