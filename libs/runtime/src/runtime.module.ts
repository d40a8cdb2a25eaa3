import { Module } from '@nestjs/common';
import { EventsModule } from '#libs/events';
import { InputsModule } from '#libs/inputs';
import { ModelsModule } from '#libs/models';
import { QueueModule } from '#libs/queue';
import { SessionsModule } from '#libs/sessions';
import { TurnsModule } from '#libs/turns';
import { RecoveryService } from './recovery.service.js';
import { SessionDriver } from './session-driver.js';

/** The agent runtime: what the worker runs. The api never imports it. */
@Module({
  imports: [SessionsModule, InputsModule, TurnsModule, ModelsModule, QueueModule, EventsModule],
  providers: [SessionDriver, RecoveryService],
  exports: [SessionDriver, RecoveryService],
})
export class RuntimeModule {}
