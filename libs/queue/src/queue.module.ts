import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { QUEUES } from './queue-names.js';
import { RunSignals, signalsRedisProviders } from './run-signals.js';
import { SessionDispatcher } from './session-dispatcher.js';

@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [AppConfig],
      // BullMQ workers require maxRetriesPerRequest: null on their blocking connections.
      useFactory: (config: AppConfig) => ({ connection: { url: config.redisUrl, maxRetriesPerRequest: null } }),
    }),
    BullModule.registerQueue({ name: QUEUES.sessions }, { name: QUEUES.maintenance }),
  ],
  providers: [SessionDispatcher, RunSignals, ...signalsRedisProviders],
  exports: [SessionDispatcher, RunSignals, BullModule],
})
export class QueueModule {}
