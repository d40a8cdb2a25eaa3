import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '#libs/agents';
import { BudgetsModule } from '#libs/budgets';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { QueueModule } from '#libs/queue';
import { AttachmentTransitions } from './acceptance/attachment-transitions.js';
import { CapabilityLimits } from './acceptance/capability-limits.js';
import { IdempotencyService } from './acceptance/idempotency.service.js';
import { TurnClaims } from './claims/turn-claims.js';
import { TurnTakeovers } from './claims/turn-takeovers.js';
import { SessionControls } from './controls/session-controls.js';
import { CooperationTransitions } from './cooperation/cooperation-transitions.js';
import { CooperationWaits } from './cooperation/cooperation-waits.js';
import { MemberControls } from './cooperation/member-controls.js';
import { MemberCreations } from './cooperation/member-creations.js';
import { TreeControls } from './cooperation/tree-controls.js';
import { TreeRepository } from './cooperation/tree.repository.js';
import { RunEndings } from './endings/run-endings.js';
import { RunOutputWriter } from './endings/run-output.js';
import { TurnSettlement } from './endings/turn-settlement.js';
import { ForkPoints } from './forks/fork-points.js';
import { ForkWrites } from './forks/fork-writes.js';
import { RunRecovery } from './recovery/run-recovery.js';
import { CooperationSignalsRetention } from './retention/cooperation-signals-retention.js';
import { ModelRequestsRetention } from './retention/model-requests-retention.js';
import { ModelCallSteps } from './steps/model-call-steps.js';
import { RunSuspensions } from './steps/run-suspensions.js';
import { ToolCallSteps } from './steps/tool-call-steps.js';
import { ToolOutputItems } from './steps/tool-output-items.js';
import { IdempotencyReceiptEntity } from './tables/receipt.entity.js';
import { InputEntity } from './tables/input.entity.js';
import { InputsRepository } from './tables/inputs.repository.js';
import { ItemsRepository } from './tables/items.repository.js';
import { SessionPurgeRepository } from './tables/session-purge.repository.js';
import { LineageRepository } from './tables/lineage.repository.js';
import { ModelRequestsRepository } from './tables/model-requests.repository.js';
import { ProjectEntity } from './tables/project.entity.js';
import { ProjectsRepository } from './tables/projects.repository.js';
import { RunsRepository } from './tables/runs.repository.js';
import { SessionEntity } from './tables/session.entity.js';
import { SessionsRepository } from './tables/sessions.repository.js';
import { StepsRepository } from './tables/steps.repository.js';
import { ItemEntity, RunEntity, TurnEntity } from './tables/turn.entities.js';
import { TurnsRepository } from './tables/turns.repository.js';
import { AfterCommit } from './transaction/after-commit.js';
import { SessionTransactions } from './transaction/session-transaction.js';
import { SessionSearch } from './views/session-search.js';
import { SessionStorageReads } from './views/session-storage.js';
import { WaitpointControls } from './waitpoints/waitpoint-controls.js';

/** One repository per table: sessions, projects, inputs, idempotency receipts, turns, runs, run steps, items, model requests, session lineage, the purge of deleted sessions (and reads across them: search, storage). */
const TABLES = [SessionsRepository, ProjectsRepository, TreeRepository, SessionSearch, SessionStorageReads, InputsRepository, IdempotencyService, TurnsRepository, RunsRepository, StepsRepository, ItemsRepository, ModelRequestsRepository, LineageRepository, SessionPurgeRepository];

/**
 * The session aggregate's systems: acceptance (inputs in), claims (a worker takes a turn), steps,
 * endings, waitpoints, cooperation (a coordinator and its members), recovery, and the clients'
 * and operators' controls. docs/architecture.md says what each owns.
 */
const SYSTEMS = [AfterCommit, SessionTransactions, TurnTakeovers, TurnSettlement, SessionControls, TurnClaims, RunEndings, RunRecovery, RunOutputWriter, ModelCallSteps, ToolCallSteps, RunSuspensions, ToolOutputItems, WaitpointControls, AttachmentTransitions, CooperationTransitions, MemberCreations, MemberControls, CooperationWaits, TreeControls, CapabilityLimits, ForkPoints, ForkWrites];

/** The engine's retention tasks (RetentionTask): the worker's retention sweep (libs/retention) runs them. */
const RETENTION = [ModelRequestsRetention, CooperationSignalsRetention];

/** Parts of a system that only other systems use: nothing outside the engine injects them. */
const INTERNAL: unknown[] = [RunOutputWriter, TurnTakeovers, ToolOutputItems, MemberCreations, MemberControls];

@Module({
  imports: [TypeOrmModule.forFeature([SessionEntity, ProjectEntity, InputEntity, IdempotencyReceiptEntity, TurnEntity, RunEntity, ItemEntity]), EventsModule, FilesModule, QueueModule, AgentsModule, BudgetsModule],
  providers: [...TABLES, ...SYSTEMS, ...RETENTION],
  exports: [...TABLES, ...SYSTEMS.filter((system) => !INTERNAL.includes(system)), ...RETENTION],
})
export class EngineModule {}
