import { Module } from '@nestjs/common';
import { EngineModule } from '#libs/engine';
import { ProtocolModule } from '#libs/protocol';
import { StandaloneWebhooksModule } from '#libs/webhooks';
import { AutomationFirer } from './firing/automation-firer.js';
import { InvocationStore } from './firing/invocation-store.js';
import { TargetInput } from './firing/target-input.js';
import { AutomationsRepository } from './tables/automations.repository.js';
import { InvocationsRepository } from './tables/invocations.repository.js';
import { AutomationTimers } from './timers/automation-timers.js';
import { AUTOMATION_USE_CASES } from './use-cases/index.js';

/**
 * Automations: the resource and its invocations (the api), the firing path (api run-now and the
 * worker's timers), the timers and the sweep (the worker). Filled in by the parts of this feature.
 */
@Module({
  imports: [ProtocolModule, EngineModule, StandaloneWebhooksModule],
  providers: [
    AutomationsRepository,
    InvocationsRepository,
    ...AUTOMATION_USE_CASES,
    AutomationTimers,
    InvocationStore,
    TargetInput,
    AutomationFirer,
  ],
  exports: [
    AutomationsRepository,
    InvocationsRepository,
    ...AUTOMATION_USE_CASES,
    AutomationTimers,
    AutomationFirer,
  ],
})
export class AutomationsModule {}
