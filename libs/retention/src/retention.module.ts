import { Module } from '@nestjs/common';
import type { RetentionTask } from '#libs/database';
import { ProtocolModule, StorageAccounting } from '#libs/protocol';
import { RETENTION_TASKS, RetentionSweep } from './retention-sweep.js';

/**
 * The worker's retention (issue 43): RetentionSweep runs the tasks listed here, each owned by the
 * lib whose tables it purges. Adding a kind: its task class here (imports and inject) and its
 * name in RETENTION_KINDS (libs/database). Storage accounting runs last: it measures what the
 * purges before it left.
 */
@Module({
  imports: [ProtocolModule],
  providers: [
    {
      provide: RETENTION_TASKS,
      useFactory: (...tasks: RetentionTask[]): RetentionTask[] => tasks,
      inject: [StorageAccounting],
    },
    RetentionSweep,
  ],
  exports: [RetentionSweep],
})
export class RetentionModule {}
