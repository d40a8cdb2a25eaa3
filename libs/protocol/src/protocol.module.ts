import { Module } from '@nestjs/common';
import { AgentsModule } from '#libs/agents';
import { AuditModule } from '#libs/audit';
import { BudgetsModule } from '#libs/budgets';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { EngineModule } from '#libs/engine';
import { ArtifactsModule, WorkspaceForksModule } from '#libs/environments';
import { ModelsModule } from '#libs/models';
import { QueueModule } from '#libs/queue';
import { TracesModule } from '#libs/traces';
import { UsageModule, UsageReportsModule } from '#libs/usage';
import { OperatorSessionQueries } from './operator-session-queries.js';
import { SessionQueriesService } from './session-queries.service.js';
import { ARTIFACT_USE_CASES, ArchiveSession, CreateProject, CreateSession, DeleteAttachment, DeleteProject, DeleteSession, ForkSession, GetProject, ListProjects, SubmitEvent, SubmitOperatorEvent, UpdateSession, UploadDraft, USE_CASES } from './use-cases/index.js';
import { IdempotentWrite } from './use-cases/idempotent-write.js';
import { Acceptance } from './use-cases/acceptance.js';
import { MessageAcceptance } from './use-cases/message-acceptance.js';
import { CancelTurn } from './use-cases/queue-controls.use-case.js';
import { BUDGET_USE_CASES } from './use-cases/budgets.use-case.js';
import { SetLifecycleClock } from './use-cases/lifecycle-clock.use-case.js';
import { SessionBudgetReads } from './session-budget-reads.js';
import { ModelPrices } from './use-cases/model-prices.use-case.js';
import { UsageReports } from './use-cases/usage-reports.use-case.js';
import { ReadSessionFile } from './use-cases/session-file-content.use-case.js';
import { ListSessionTraces } from './use-cases/traces.use-case.js';
import { GetSessionStorage } from './use-cases/session-storage.use-case.js';
import { StorageUsageRepository } from './storage/storage-usage.repository.js';
import { StorageQuota, StorageTotals } from './storage/storage-totals.js';

/** The public protocol's use cases, composed from the data libs; the api's controllers call only this. */
@Module({
  imports: [AuditModule, BudgetsModule, AgentsModule, FilesModule, EngineModule, ModelsModule, QueueModule, EventsModule, ArtifactsModule, WorkspaceForksModule, UsageModule, UsageReportsModule, TracesModule],
  providers: [...USE_CASES, ...ARTIFACT_USE_CASES, ...BUDGET_USE_CASES, SessionBudgetReads, SessionQueriesService, OperatorSessionQueries, ModelPrices, UsageReports, ReadSessionFile, ListSessionTraces, GetSessionStorage, SetLifecycleClock, StorageUsageRepository, StorageTotals, StorageQuota],
  exports: [IdempotentWrite, Acceptance, MessageAcceptance, CancelTurn, CreateSession, SubmitEvent, CreateProject, ListProjects, GetProject, DeleteProject, UpdateSession, ArchiveSession, DeleteSession, ForkSession, UploadDraft, DeleteAttachment, SessionQueriesService, OperatorSessionQueries, SubmitOperatorEvent, AgentsModule, ...ARTIFACT_USE_CASES, ...BUDGET_USE_CASES, SessionBudgetReads, ModelPrices, UsageModule, UsageReports, ReadSessionFile, ListSessionTraces, GetSessionStorage, SetLifecycleClock, StorageUsageRepository, StorageTotals],
})
export class ProtocolModule {}
