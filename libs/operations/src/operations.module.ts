import { Module } from '@nestjs/common';
import { AuditModule } from '#libs/audit';
import { EventsModule } from '#libs/events';
import { EngineModule } from '#libs/engine';
import { ProtocolModule } from '#libs/protocol';
import { QueueModule } from '#libs/queue';
import { BulkCancelSessions } from './use-cases/bulk-cancel.use-case.js';
import { ListOpenWaitpoints } from './use-cases/open-waitpoints.use-case.js';
import { GetQueueStatus } from './use-cases/queue-status.use-case.js';
import { ListModelRequests } from './use-cases/model-requests.use-case.js';
import { GetSessionTimeline } from './use-cases/session-timeline.use-case.js';

const USE_CASES = [GetSessionTimeline, ListOpenWaitpoints, GetQueueStatus, BulkCancelSessions, ListModelRequests];

/**
 * The operator API's use cases: reads across every owner's sessions (timeline, inbox,
 * queues, a run's exact model requests) and bulk actions. Access is checked by the api's admin controllers, not here.
 */
@Module({
  imports: [AuditModule, EventsModule, EngineModule, ProtocolModule, QueueModule],
  providers: USE_CASES,
  exports: USE_CASES,
})
export class OperationsModule {}
