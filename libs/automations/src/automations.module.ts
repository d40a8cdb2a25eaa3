import { Module } from '@nestjs/common';
import { EngineModule } from '#libs/engine';
import { ProtocolModule } from '#libs/protocol';
import { StandaloneWebhooksModule } from '#libs/webhooks';
import { AutomationFirer } from './firing/automation-firer.js';
import { InvocationStore } from './firing/invocation-store.js';
import { TargetInput } from './firing/target-input.js';

/**
 * Automations: the resource and its invocations (the api), the firing path (api run-now and the
 * worker's timers), the timers and the sweep (the worker). Filled in by the parts of this feature.
 */
@Module({
  imports: [ProtocolModule, EngineModule, StandaloneWebhooksModule],
  providers: [InvocationStore, TargetInput, AutomationFirer],
  exports: [AutomationFirer],
})
export class AutomationsModule {}
