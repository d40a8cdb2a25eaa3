import { Module } from '@nestjs/common';
import { ConfigModule, loggingModule } from '#libs/config';
import { DatabaseModule } from '#libs/database';
import { MetricsModule } from '#libs/metrics';
import { QueueModule } from '#libs/queue';
import { RuntimeModule } from '#libs/runtime';
import { MaintenanceProcessor, SessionDispatchProcessor } from './processors.js';
import { WorkerBootstrap } from './worker-bootstrap.js';

/** The shared core minus the HTTP API: runtime, queues, database. */
@Module({
  imports: [loggingModule('worker'), ConfigModule, MetricsModule.forRoot('worker'), DatabaseModule, QueueModule, RuntimeModule],
  providers: [SessionDispatchProcessor, MaintenanceProcessor, WorkerBootstrap],
})
export class WorkerModule {}
