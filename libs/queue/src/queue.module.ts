import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { QUEUES } from './queue-names.js';
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
  providers: [SessionDispatcher],
  exports: [SessionDispatcher, BullModule],
})
export class QueueModule {}
