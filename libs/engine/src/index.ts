// The session aggregate: sessions, their inputs, turns, runs, steps, items and waitpoints, and every
// transition between their states. See docs/architecture.md for its systems and what each owns.
export { EngineModule } from './engine.module.js';
// formerly #libs/sessions
export type { ProjectEntity } from './tables/project.entity.js';
export { type NewProject, ProjectsRepository } from './tables/projects.repository.js';
export type { SessionEntity, SubagentInfo, TurnSummary } from './tables/session.entity.js';
export { SESSION_COLUMNS, sessionFromRow } from './tables/session.entity.js';
export { ttlFirstCheck, ttlNextCheckSql } from './tables/session-ttl-check.js';
export { type CancellableFilter, type NewSession, type SessionFilter, type SessionPatch, SessionsRepository } from './tables/sessions.repository.js';
export { type MemberSignal, type MemberState, type NewMember, TreeRepository } from './cooperation/tree.repository.js';
export { type SessionRowStorage, SessionStorageReads } from './views/session-storage.js';
export { type FoundSession, idPrefixRange, type SearchStatus, type SessionOwner, sessionOwnerOf, SessionSearch, type SessionSearchFilter } from './views/session-search.js';
export { COOPERATION_SIGNAL_MACHINE, type CooperationSignalStatus, SESSION_STATUS_MACHINE, type SessionStatus, type SessionStatusSource, sessionStatusOf, sessionStatusSql } from './machines/session-states.js';
export { acceptanceSessionColumns, acceptInputGuarded, type ReadForAcceptance, readForAcceptance, visibleSessionRead } from './acceptance/session-acceptance.js';
export { type ClaimRead, lockForClaim, runStartedWrite, turnFreedWrite, turnStartedWrite } from './claims/session-claims.js';

// formerly #libs/inputs
export { IdempotencyService, type IdempotentResponse, type IdempotencyScope, type ReceiptRow, receiptLookup, type SqlFragment, type WorkResult } from './acceptance/idempotency.service.js';
export type { AttachmentStatus, FrozenInputConfig, InputContentBlock, InputEntity, InputMessage, InputMode, InputStatus } from './tables/input.entity.js';
export { InputContentBlockDto, InputDto, InputMessageDto } from './views/input.dto.js';
export { InputsRepository, type NewInput, type RidingWrite, toInputDto } from './tables/inputs.repository.js';
export { ATTACHMENT_MACHINE, ATTACHMENT_STATUSES, ATTACHMENT_TRANSITIONS, INPUT_MACHINE, INPUT_MODE_MACHINE, INPUT_MODES, INPUT_STATUSES, INPUT_TRANSITIONS, MODE_TRANSITIONS } from './machines/input-states.js';
export { PREPARATION_RETRY_MAX_MS, preparationRetryDelayMs } from './acceptance/preparation-backoff.js';
export { type AcceptedReceipt, IdempotencyReceiptEntity } from './tables/receipt.entity.js';
export { CLAIM_QUEUE, claimBatch, claimQueueInputs, consumedWrite } from './claims/claim-queue.js';

// formerly #libs/turns
export { assistantContent, CALL_ITEM_TYPES, type CallItemType, COMPACTION_TRIGGERS, isCallItem, isReasoningPart, REASONING_PART } from './tables/turn.entities.js';
export type { CommandExecutionRecord, CommittedStep, CompactionRecord, CompactionTrigger, ItemEntity, ItemStatus, PublicError, RunCheckpoint, RunEntity, RunStatus, StepKind, StepOutput, StoredContentPart, ToolCallSpec, TurnContext, TurnEntity, TurnStatus, Usage, Waitpoint, WaitpointKind, WaitpointQuestion, WaitpointElicitation, WaitpointResponse } from './tables/turn.entities.js';
export { toActiveMessageDto, toCurrentTurn, toItemDto, toRunDto, toRunSummary, toTurnDetailDto, toTurnDto } from './views/projections.js';
export { CallUsageDto, ContentPartDto, ItemDto, ItemListDto, PublicErrorDto, RunDto, RunSummaryDto, TurnContextDto, TurnDetailDto, TurnDto, TurnListDto, TurnStateDto, UsageDto, WaitpointDto, WaitpointQuestionDto, WaitpointToolCallDto } from './views/turn.dto.js';
export { ACTIVE_TURN_STATUSES, CANCEL_WINS_OVER, ITEM_MACHINE, ITEM_STATUSES, LEASABLE_RUN_STATUSES, RUN_MACHINE, RUN_STATUSES, RUN_TRANSITIONS, SETTLED_RUN_STATUSES, type SettledStatus, settledStatus, settledStatusSql, sqlList, STEP_KINDS, STEP_MACHINE, STEP_STATUSES, STEP_TRANSITIONS, type StepStatus, statusGuard, TERMINAL_TURN_STATUSES, type Transition, TURN_MACHINE, TURN_STATUSES, TURN_TRANSITIONS } from './machines/turn-states.js';
export { type ContextItems, insertItemsWrite, ItemsRepository, type NewItem } from './tables/items.repository.js';
export { itemText, itemTokens, itemTokensIfLoaded } from './views/item-tokens.js';
export type { Lease } from './claims/lease.js';
export { RunsRepository, type SuccessorSpec } from './tables/runs.repository.js';
export { type NewStep, StepsRepository } from './tables/steps.repository.js';
export { type ModelRequestRow, ModelRequestsRepository } from './tables/model-requests.repository.js';
export { ModelRequestsRetention } from './retention/model-requests-retention.js';
export { CooperationSignalsRetention } from './retention/cooperation-signals-retention.js';
export { type NewTurn, type SettleSpec, TurnsRepository } from './tables/turns.repository.js';
export { MAX_TRACED_TURN_INPUTS, TRACED_TURN_RETENTION_MARGIN_S, type TracedTurnRow, type TracedTurnsQuery } from './views/traced-turns.js';
export { type OpenWaitpointFilter, type OpenWaitpointRow, type RunFleetCounts, TIMELINE_TEXT_MAX, type TimelineRunRow, type TimelineStepRow } from './views/operator-reads.js';
export { leaseStateOf, leaseStateSql, RUN_LEASE_MACHINE, type RunLeaseState } from './machines/lease-machine.js';
export { BUDGET_CALL_ID, type BudgetReached, budgetReachedOf, type BudgetWaitpoint, type CallsWaitpoint, parseWaitpoint, type QuestionWaitpoint, type TaggedWaitpoint, WAITPOINT_KINDS, waitpointProblem } from './waitpoints/waitpoints.js';
export { turnStartRows, turnStartWrites } from './claims/turn-start-writes.js';

// formerly #libs/lifecycle
export { AfterCommit, type Committed, type Nudge } from './transaction/after-commit.js';
export { attachmentBindings, AttachmentTransitions } from './acceptance/attachment-transitions.js';
export { CapabilityLimits } from './acceptance/capability-limits.js';
export { gateCancelInput, gatePromoteInput, refuseWhileBlocked } from './acceptance/input-gates.js';
export { type MessagePlan, type MessageSpec, mayHaveActiveTurn, planMessage, resolveMode, SessionControls } from './controls/session-controls.js';
export { CAPABILITY_LIMIT_MESSAGES, EVENT_BUILDERS, turnEvents } from './steps/turn-events.js';
export type { HeldTurn, InputTrace, Interrupted, Outcome, RunOutput, Seized, Settled, SettledTurn, Successor } from './claims/held-turn.js';
export { RunEndings } from './endings/run-endings.js';
export { TurnSettlement } from './endings/turn-settlement.js';
export { assistantItem, runCheckpoint, turnSeconds } from './endings/run-output.js';
export { RunRecovery } from './recovery/run-recovery.js';
export { accountLockThreshold, admitted, CLAIM_LOCK_MARGIN, TurnClaims } from './claims/turn-claims.js';
export { TurnTakeovers } from './claims/turn-takeovers.js';
export { type EmitOptions, SessionTransactions, type SessionTx } from './transaction/session-transaction.js';
export type { Recorded } from './steps/recorded.js';
export { type CompactionCommit, ModelCallSteps, type ModelStep, type RecordedModelStep } from './steps/model-call-steps.js';
export { type RecordedToolResult, type SamplingCall, ToolCallSteps, type ToolEffects } from './steps/tool-call-steps.js';
export { RunSuspensions } from './steps/run-suspensions.js';
export { ToolOutputItems } from './steps/tool-output-items.js';
export { COMMAND_ITEM_TYPE, type CommandEnding, commandItemId, isCommandCall } from './steps/command-items.js';
export { type Resumed, WaitpointControls } from './waitpoints/waitpoint-controls.js';
export { acceptedReceipt, frozenInputConfig } from './acceptance/input-config.js';
export { acceptingInput } from './acceptance/accept-input-span.js';
export { approvalRequestId, parseApprovalRequestId, type RequiredAction, SESSION_STATUSES, sessionStatus, type SessionView, toSessionDto } from './views/session-view.js';
export { type EnvironmentView, environmentView, type HostedEnvironmentView } from './views/environment-view.js';
export { type Coordinated, CooperationTransitions } from './cooperation/cooperation-transitions.js';
export { MemberControls } from './cooperation/member-controls.js';
export { MemberCreations } from './cooperation/member-creations.js';
export { type Awaited, CooperationWaits } from './cooperation/cooperation-waits.js';
export * as cooperationRules from './cooperation/cooperation-rules.js';
export { gateTreeContinue, type LockedTree, TreeControls } from './cooperation/tree-controls.js';

// forks: a session that shares its source's history up to a turn by reference
export { type BasedSegment, type ForkAsk, type ForkedFrom, type ForkFields, type ForkPoint, type ForkPosition, FORK_POSITIONS, type LineageSegment } from './forks/lineage.types.js';
export { composeLineage } from './forks/compose-lineage.js';
export { ForkPoints } from './forks/fork-points.js';
export { ForkWrites } from './forks/fork-writes.js';
export { LineageRepository } from './tables/lineage.repository.js';
export { SessionPurgeRepository } from './tables/session-purge.repository.js';
export { type HistoryScope } from './tables/lineage-reads.js';
