import { Module } from '@nestjs/common';
import { AuditModule, AuditRetention } from '#libs/audit';
import type { RetentionTask } from '#libs/database';
import { CooperationSignalsRetention, EngineModule, ModelRequestsRetention } from '#libs/engine';
import { ProtocolModule } from '#libs/protocol';
import { RETENTION_TASKS, RetentionSweep } from './retention-sweep.js';
import { SessionTtlSweep } from './session-ttl-sweep.js';

/**
 * The worker's retention (issue 43): RetentionSweep runs the tasks listed here, each owned by the
 * lib whose tables it purges. Adding a kind: its task class here (imports and inject) and its
 * name in RETENTION_KINDS (libs/database). The session TTL's task lives here rather than in
 * libs/engine: it archives and deletes through the protocol's own transitions (DeleteSession).
 */
@Module({
  imports: [EngineModule, AuditModule, ProtocolModule],
  providers: [
    SessionTtlSweep,
    {
      provide: RETENTION_TASKS,
      useFactory: (...tasks: RetentionTask[]): RetentionTask[] => tasks,
      inject: [SessionTtlSweep, ModelRequestsRetention, CooperationSignalsRetention, AuditRetention],
    },
    RetentionSweep,
  ],
  exports: [RetentionSweep],
})
export class RetentionModule {}
