import { Module } from '@nestjs/common';
import type { RetentionTask } from '#libs/database';
import { EngineModule } from '#libs/engine';
import { EnvironmentsModule } from '#libs/environments';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { TracesModule } from '#libs/traces';
import { RETENTION_TASKS, RetentionSweep } from './retention-sweep.js';
import { SessionPurge } from './session-purge.js';

/**
 * The worker's retention (issue 43): RetentionSweep runs the tasks listed here, each owned by the
 * lib whose tables it purges. Adding a kind: its task class here (imports and inject) and its
 * name in RETENTION_KINDS (libs/database).
 */
@Module({
  imports: [EngineModule, EnvironmentsModule, EventsModule, FilesModule, TracesModule],
  providers: [
    SessionPurge,
    {
      provide: RETENTION_TASKS,
      useFactory: (...tasks: RetentionTask[]): RetentionTask[] => tasks,
      inject: [SessionPurge],
    },
    RetentionSweep,
  ],
  exports: [RetentionSweep],
})
export class RetentionModule {}
