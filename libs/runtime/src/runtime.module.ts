import { CooperationStep } from './cooperation-step.js';
import { Module } from '@nestjs/common';
import { BudgetsModule } from '#libs/budgets';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { EngineModule } from '#libs/engine';
import { ModelsModule } from '#libs/models';
import { QueueModule } from '#libs/queue';
import { ToolsModule } from '#libs/tools';
import { EnvironmentsModule } from '#libs/environments';
import { AttachmentPreparer } from './attachment-preparer.js';
import { BudgetGate } from './budget-gate.js';
import { FencingStats } from './fencing-stats.js';
import { ImageReferences } from './image-references.js';
import { ModelImages } from './model-images.js';
import { OutboxRelay } from './outbox-relay.js';
import { QueueMetrics } from './queue-metrics.js';
import { RecoveryService } from './recovery.service.js';
import { ExpiredRowsCleanup } from './expired-rows-cleanup.js';
import { LeaseTakeovers } from './lease-takeovers.js';
import { PreparationResumption } from './preparation-resumption.js';
import { WaitingWorkNudges } from './waiting-work-nudges.js';
import { DurableWrites } from './durable-writes.js';
import { CompactionStep } from './compaction-step.js';
import { ContextManager } from './context-manager.js';
import { ModelCallStep } from './model-call-step.js';
import { ModelStreams } from './model-streams.js';
import { RunClosing } from './run-closing.js';
import { RunExecutor } from './run-executor.js';
import { RunScopes } from './run-scope.js';
import { McpCallsInFlight } from './mcp-calls-in-flight.js';
import { McpSampling } from './mcp-sampling.js';
import { HarnessCalls } from './harness-calls.js';
import { ToolCallStep } from './tool-call-step.js';
import { TurnPlanning } from './turn-planning.js';
import { SessionDriver } from './session-driver.js';
import { DrivePasses } from './drive-passes.js';

/** The agent runtime: what the worker runs. The api never imports it. */
@Module({
  // The harness's tools run in sessions' workspaces (SessionEnvironments, EnvironmentsModule).
  imports: [EngineModule, BudgetsModule, ModelsModule, ToolsModule, QueueModule, EventsModule, FilesModule, EnvironmentsModule],
  providers: [RunExecutor, BudgetGate, RunScopes, TurnPlanning, ModelCallStep, ToolCallStep, HarnessCalls, McpSampling, McpCallsInFlight, CooperationStep, ContextManager, CompactionStep, ModelStreams, RunClosing, DurableWrites, ImageReferences, ModelImages, SessionDriver, DrivePasses, RecoveryService, LeaseTakeovers, WaitingWorkNudges, PreparationResumption, ExpiredRowsCleanup, OutboxRelay, FencingStats, QueueMetrics, AttachmentPreparer],
  exports: [SessionDriver, DrivePasses, RecoveryService, OutboxRelay, FencingStats, AttachmentPreparer],
})
export class RuntimeModule {}
