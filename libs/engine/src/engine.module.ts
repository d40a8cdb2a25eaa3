import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AgentsModule } from '#libs/agents';
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
import { TreeControls } from './cooperation/tree-controls.js';
import { TreeRepository } from './cooperation/tree.repository.js';
import { RunEndings } from './endings/run-endings.js';
import { RunOutputWriter } from './endings/run-output.js';
import { TurnSettlement } from './endings/turn-settlement.js';
import { RunRecovery } from './recovery/run-recovery.js';
import { StepTransitions } from './steps/step-transitions.js';
import { IdempotencyReceiptEntity } from './tables/receipt.entity.js';
import { InputEntity } from './tables/input.entity.js';
import { InputsRepository } from './tables/inputs.repository.js';
import { ItemsRepository } from './tables/items.repository.js';
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
import { WaitpointControls } from './waitpoints/waitpoint-controls.js';

/** One repository per table: sessions, projects, inputs, idempotency receipts, turns, runs, run steps, items, model requests. */
const TABLES = [SessionsRepository, ProjectsRepository, TreeRepository, SessionSearch, InputsRepository, IdempotencyService, TurnsRepository, RunsRepository, StepsRepository, ItemsRepository, ModelRequestsRepository];

/**
 * The session aggregate's systems: acceptance (inputs in), claims (a worker takes a turn), steps,
 * endings, waitpoints, cooperation (a coordinator and its members), recovery, and the clients'
 * and operators' controls. docs/architecture.md says what each owns.
 */
const SYSTEMS = [AfterCommit, SessionTransactions, TurnTakeovers, TurnSettlement, SessionControls, TurnClaims, RunEndings, RunRecovery, RunOutputWriter, StepTransitions, WaitpointControls, AttachmentTransitions, CooperationTransitions, CooperationWaits, TreeControls, CapabilityLimits];

@Module({
  imports: [TypeOrmModule.forFeature([SessionEntity, ProjectEntity, InputEntity, IdempotencyReceiptEntity, TurnEntity, RunEntity, ItemEntity]), EventsModule, FilesModule, QueueModule, AgentsModule],
  providers: [...TABLES, ...SYSTEMS],
  exports: [...TABLES, ...SYSTEMS.filter((system) => system !== RunOutputWriter && system !== TurnTakeovers)],
})
export class EngineModule {}
