export { CreateSessionDto, CreateSessionYuxiDto, SessionAgentOverrideDto } from './dto/create-session.dto.js';
export { ForkSessionDto } from './dto/fork-session.dto.js';
export {
  CurrentTurnDto,
  ListQueryDto,
  ReceiptDto,
  ReceiptQueryDto,
  SessionAgentDto,
  SessionDeletedDto,
  SessionDto,
  SessionListDto,
  SessionListQueryDto,
  SessionYuxiDto,
} from './dto/session.dto.js';
export { INPUT_MESSAGE_SCHEMA } from './dto/input.schema.js';
export { CompactEventDto, MessageEventDto, MessageEventYuxiDto, PROTOCOL_EVENT_TYPES, SubmitEventsDto } from './dto/submit-event.dto.js';
export { type InlineImageBatch, InlineImages } from './inline-images.js';
export { checkInputText, cutText, MAX_IMAGE_BYTES_TOTAL, messageText, parseAgentInput } from './input-parser.js';
export { ProtocolModule } from './protocol.module.js';
export { SessionQueriesService } from './session-queries.service.js';
export { OperatorSessionQueries, ownerDto } from './operator-session-queries.js';
export { ArtifactListQueryDto } from './dto/artifacts.dto.js';
export { AdminSessionDto, AdminSessionListDto, AdminSessionListQueryDto, AdminSessionYuxiDto, MAX_UNIX_SECONDS, SessionOwnerDto } from './dto/admin-session.dto.js';
export { IdempotentWrite } from './use-cases/idempotent-write.js';
export { MessageAcceptance } from './use-cases/message-acceptance.js';
export { type Accepted, Acceptance } from './use-cases/acceptance.js';
export type { PreparedCreate } from './use-cases/create-session.use-case.js';
export { CancelTurn } from './use-cases/queue-controls.use-case.js';
export { DeleteArtifact, GetArtifact, GetArtifactContent, ListArtifacts } from './use-cases/artifacts.use-case.js';
export { ModelPrices } from './use-cases/model-prices.use-case.js';
export { ListSessionTraces, MAX_TRACED_TURNS_SCANNED, MAX_TRACED_TURNS_SCANNED_EMPTY, type ScanChunk, turnsWithSpans } from './use-cases/traces.use-case.js';
export { ArchiveSession, CreateProject, CreateSession, DeleteAttachment, DeleteSession, ForkSession, UploadDraft, DeleteProject, GetProject, ListProjects, SubmitEvent, SubmitOperatorEvent, OPERATOR_EVENT_TYPES, UpdateSession } from './use-cases/index.js';
export { CreateProjectDto, ProjectDeletedDto, ProjectDto, ProjectListDto } from './dto/project.dto.js';
export { InputDetailDto, QueueDto, SessionStateDto } from './dto/queue.dto.js';
export { CancelInputEventDto, CancelTurnEventDto, CancelTurnYuxiDto, ContinueQueueEventDto, PromoteInputEventDto, TreeContinueEventDto, TreeStopEventDto, UpdateSessionDto, UpdateSessionYuxiDto } from './dto/update-session.dto.js';
export { AnswerResponseDto, ApprovalDecisionDto, ApprovalResponseDto, ResumeEventDto, ToolResultEventDto, UpstreamApprovalResultEventDto, UpstreamToolResultEventDto, WaitpointAnswerDto } from './dto/waitpoint-events.dto.js';
export { chosenMetadata, gatherMetadataFilter, METADATA_LIMITS, metadataErrors, parseIfMatch } from './session-metadata.js';
export { DEFAULT_SESSION_TITLE, DERIVED_TITLE_MAX_CHARS, titleFromInput } from './session-title.js';
export { BudgetDeletedDto, BudgetDto, BudgetLimitsDto, BudgetListDto, BudgetScopeDto, BudgetSpentDto, BUDGET_LIMIT_MAX, CreateBudgetDto, SessionBudgetDto, SessionBudgetParamDto, SetUsageClockDto, UpdateBudgetDto, UsageClockDto } from './dto/budget.dto.js';
export { budgetViewerOf, BUDGET_USE_CASES, CreateBudget, DeleteBudget, GetBudget, ListBudgets, SetUsageClock, UpdateBudget } from './use-cases/budgets.use-case.js';
export { SessionBudgetReads } from './session-budget-reads.js';
export { AdminUsageReportQueryDto, UsageReportDto, UsageReportQueryDto, UsageReportRowDto } from './dto/usage-report.dto.js';
export { ownUsageScope, UsageReports } from './use-cases/usage-reports.use-case.js';
export { GetSessionStorage } from './use-cases/session-storage.use-case.js';
export { FileStorageDto, RowStorageDto, SessionStorageDto, WorkspaceStorageDto } from './dto/session-storage.dto.js';
export { ReadSessionFile } from './use-cases/session-file-content.use-case.js';
export { inheritedItemDto } from './inherited-items.js';
export { LifecycleClockDto, SetLifecycleClockDto } from './dto/lifecycle-clock.dto.js';
export { SetLifecycleClock } from './use-cases/lifecycle-clock.use-case.js';
export { type StaleUsage, StorageUsageRepository } from './storage/storage-usage.repository.js';
export { type TotalDelta, totalDeltas, type UsageContribution } from './storage/storage-deltas.js';
export { StorageQuota, StorageTotals } from './storage/storage-totals.js';
export { ProjectStorageDto, StorageTotalDto, StorageTotalListDto, StorageTotalsQueryDto } from './dto/storage-totals.dto.js';
