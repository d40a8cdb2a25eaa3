import { Module } from '@nestjs/common';
import { QueueModule } from '#libs/queue';
import { AutomationFirer } from './firing/automation-firer.js';
import { AutomationScheduler } from './timers/automation-scheduler.js';
import { AutomationSweep } from './timers/automation-sweep.js';
import { AutomationTimers } from './timers/automation-timers.js';
import { DueStore } from './timers/due-store.js';

/**
 * Automations: the resource and its invocations (the api), the firing path (api run-now and the
 * worker's timers), the timers and the sweep (the worker). Filled in by the parts of this feature.
 */
@Module({
  imports: [QueueModule],
  providers: [AutomationFirer, AutomationTimers, DueStore, AutomationScheduler, AutomationSweep],
  exports: [AutomationFirer, AutomationTimers, AutomationScheduler, AutomationSweep],
})
export class AutomationsModule {}
