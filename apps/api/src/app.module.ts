import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { AgentsFile } from '#libs/agents';
import { AccessGuard, AuthModule } from '#libs/auth';
import { AuditModule } from '#libs/audit';
import { AutomationsModule } from '#libs/automations';
import { ConfigModule, loggingModule } from '#libs/config';
import { DatabaseModule } from '#libs/database';
import { AllExceptionsFilter } from '#libs/errors';
import { EventStreamModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { MetricsModule } from '#libs/metrics';
import { ProtocolModule } from '#libs/protocol';
import { OperationsModule } from '#libs/operations';
import { SecretsModule } from '#libs/secrets';
import { TracesModule } from '#libs/traces';
import { ModelPricesFile } from '#libs/usage';
import { WebhooksModule } from '#libs/webhooks';
import { BootstrapKey } from './bootstrap-key.js';
import { AdminAgentsController } from './controllers/admin-agents.controller.js';
import { AdminApiKeysController } from './controllers/admin-api-keys.controller.js';
import { AdminAuditController } from './controllers/admin-audit.controller.js';
import { AdminModelPricesController } from './controllers/admin-model-prices.controller.js';
import { AdminSessionsController } from './controllers/admin-sessions.controller.js';
import { AdminQueuesController } from './controllers/admin-queues.controller.js';
import { AdminUsageClockController } from './controllers/admin-usage-clock.controller.js';
import { AdminLifecycleClockController } from './controllers/admin-lifecycle-clock.controller.js';
import { AdminStorageController } from './controllers/admin-storage.controller.js';
import { AdminSessionOperationsController } from './controllers/admin-session-operations.controller.js';
import { AdminUsersController } from './controllers/admin-users.controller.js';
import { AdminSecretsController } from './controllers/admin-secrets.controller.js';
import { AdminWaitpointsController } from './controllers/admin-waitpoints.controller.js';
import { ConsoleSettingsController } from './controllers/console-settings.controller.js';
import { MeController } from './controllers/me.controller.js';
import { AgentFilesController } from './controllers/agent-files.controller.js';
import { AgentsController } from './controllers/agents.controller.js';
import { AutomationReadsController, AutomationsController } from './controllers/automations.controller.js';
import { BudgetsController } from './controllers/budgets.controller.js';
import { FilesController } from './controllers/files.controller.js';
import { HealthController } from './controllers/health.controller.js';
import { MetricsController } from './controllers/metrics.controller.js';
import { ProjectsController } from './controllers/projects.controller.js';
import { SessionEventsController } from './controllers/session-events.controller.js';
import { SessionFilesController } from './controllers/session-files.controller.js';
import { SessionArtifactsController } from './controllers/session-artifacts.controller.js';
import { SessionForksController } from './controllers/session-forks.controller.js';
import { SessionTracesController } from './controllers/session-traces.controller.js';
import { SessionStorageController } from './controllers/session-storage.controller.js';
import { SessionsController } from './controllers/sessions.controller.js';
import { SseResponder } from './controllers/sse-responder.js';
import { AdminUsageController, UsageController } from './controllers/usage.controller.js';
import { WebhookDeliveriesController } from './controllers/webhook-deliveries.controller.js';
import { WebhooksController } from './controllers/webhooks.controller.js';
import { HealthModule } from './health.module.js';
import { HttpDrain } from './http-drain.js';

@Module({
  imports: [loggingModule('api'), ConfigModule, MetricsModule.forRoot('api'), DatabaseModule, AuthModule, AuditModule, ProtocolModule, OperationsModule, EventStreamModule, FilesModule, HealthModule, SecretsModule, WebhooksModule, AutomationsModule, TracesModule],
  // Sessions, files, projects, webhooks, budgets, automations and usage before agents: `GET /agents/sessions` must not be taken for the agent named "sessions".
  controllers: [
    HealthController,
    MetricsController,
    SessionsController,
    SessionEventsController,
    SessionFilesController,
    SessionArtifactsController,
    SessionForksController,
    SessionTracesController,
    SessionStorageController,
    FilesController,
    AgentFilesController,
    ProjectsController,
    WebhooksController,
    WebhookDeliveriesController,
    BudgetsController,
    AutomationsController,
    AutomationReadsController,
    UsageController,
    AgentsController,
    AdminAgentsController,
    AdminSecretsController,
    AdminApiKeysController,
    AdminAuditController,
    AdminUsersController,
    MeController,
    ConsoleSettingsController,
    AdminSessionsController,
    AdminSessionOperationsController,
    AdminWaitpointsController,
    AdminQueuesController,
    AdminUsageClockController,
    AdminLifecycleClockController,
    AdminStorageController,
    AdminUsageController,
    AdminModelPricesController,
  ],
  providers: [BootstrapKey, AgentsFile, ModelPricesFile, SseResponder, HttpDrain, { provide: APP_GUARD, useClass: AccessGuard }, { provide: APP_FILTER, useClass: AllExceptionsFilter }],
})
export class AppModule {}
