import { Module } from '@nestjs/common';
import { AuditModule, AuditRetention } from '#libs/audit';
import { BudgetsModule } from '#libs/budgets';
import type { RetentionTask } from '#libs/database';
import { CooperationSignalsRetention, EngineModule, ModelRequestsRetention } from '#libs/engine';
import { EnvironmentsModule } from '#libs/environments';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { ProtocolModule } from '#libs/protocol';
import { TracesModule } from '#libs/traces';
import { LifecycleClockGuard } from './lifecycle-clock-guard.js';
import { RETENTION_TASKS, RetentionSweep } from './retention-sweep.js';
import { SessionPurge } from './session-purge.js';
import { SessionTtlSweep } from './session-ttl-sweep.js';
import { StorageAccounting } from './storage-accounting.js';

/**
 * The worker's retention (issue 43): RetentionSweep runs the tasks listed here, each owned by the
 * lib whose tables it purges. Adding a kind: its task class here (imports and inject) and its
 * name in RETENTION_KINDS (libs/database). The session TTL's task lives here rather than in
 * libs/engine: it archives and deletes through the protocol's own transitions (DeleteSession).
 * So does the storage accounting's: it measures through the protocol's GetSessionStorage, and
 * writes the protocol's storage tables through StorageUsageRepository.
 * Storage accounting runs last: it measures what the purges before it left.
 */
@Module({
  imports: [EngineModule, AuditModule, BudgetsModule, ProtocolModule, EnvironmentsModule, EventsModule, FilesModule, TracesModule],
  providers: [
    SessionTtlSweep,
    SessionPurge,
    StorageAccounting,
    {
      provide: RETENTION_TASKS,
      useFactory: (...tasks: RetentionTask[]): RetentionTask[] => tasks,
      // A TTL's deletions first, then the purge of sessions deleted long enough ago, then the aged rows; storage accounting last.
      inject: [SessionTtlSweep, SessionPurge, ModelRequestsRetention, CooperationSignalsRetention, AuditRetention, StorageAccounting],
    },
    RetentionSweep,
    LifecycleClockGuard,
  ],
  exports: [RetentionSweep],
})
export class RetentionModule {}
