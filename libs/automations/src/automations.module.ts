import { Module } from '@nestjs/common';

/**
 * Automations: the resource and its invocations (the api), the firing path (api run-now and the
 * worker's timers), the timers and the sweep (the worker). Filled in by the parts of this feature.
 */
@Module({
  imports: [],
  providers: [],
  exports: [],
})
export class AutomationsModule {}
