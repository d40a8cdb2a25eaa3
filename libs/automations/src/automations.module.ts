import { Module } from '@nestjs/common';
import { EngineModule } from '#libs/engine';
import { FilesModule } from '#libs/files';
import { ProtocolModule } from '#libs/protocol';
import { QueueModule } from '#libs/queue';
import { StandaloneWebhooksModule } from '#libs/webhooks';
import { AutomationFirer } from './firing/automation-firer.js';
import { InvocationStore } from './firing/invocation-store.js';
import { TargetInput } from './firing/target-input.js';
import { AutomationsRepository } from './tables/automations.repository.js';
import { InvocationsRepository } from './tables/invocations.repository.js';
import { AutomationScheduler } from './timers/automation-scheduler.js';
import { AutomationSweep } from './timers/automation-sweep.js';
import { AutomationTimers } from './timers/automation-timers.js';
import { DueStore } from './timers/due-store.js';
import { AutomationTargetChecks } from './use-cases/automation-checks.js';
import { AUTOMATION_USE_CASES } from './use-cases/index.js';

/**
 * Automations: the resource and its invocations (the api), the firing path (api run-now and the
 * worker's timers), the timers and the sweep (the worker).
 */
@Module({
  imports: [EngineModule, FilesModule, ProtocolModule, QueueModule, StandaloneWebhooksModule],
  providers: [
    AutomationsRepository,
    InvocationsRepository,
    // What create and update check a target with (not an operation of its own).
    AutomationTargetChecks,
    ...AUTOMATION_USE_CASES,
    InvocationStore,
    TargetInput,
    AutomationFirer,
    AutomationTimers,
    DueStore,
    AutomationScheduler,
    AutomationSweep,
  ],
  exports: [
    AutomationsRepository,
    InvocationsRepository,
    ...AUTOMATION_USE_CASES,
    AutomationFirer,
    AutomationTimers,
    AutomationScheduler,
    AutomationSweep,
  ],
})
export class AutomationsModule {}
