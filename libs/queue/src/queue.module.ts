import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { queuePrefix, useClusterForBullMQ } from './bullmq-cluster.js';
import { QUEUES } from './queue-names.js';
import { QuietQueue, QuietWorker } from './quiet-bullmq.js';
import { AllQueues } from './all-queues.js';
import { RunSignals, signalsRedisProviders } from './run-signals.js';
import { AttachmentJobs } from './attachment-jobs.js';
import { WebhookJobs } from './webhook-jobs.js';
import { SessionDispatcher } from './session-dispatcher.js';
import { SessionLinger } from './session-linger.js';
import { presenceRedisProvider, WorkerPresence } from './worker-presence.js';

// Every queue and worker @nestjs/bullmq creates listens for its connections' errors (see quiet-bullmq).
BullModule.queueClass = QuietQueue;
BullModule.workerClass = QuietWorker;

@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [AppConfig],
      // BullMQ workers require maxRetriesPerRequest: null on their blocking connections. On a
      // cluster, every connection BullMQ opens is a cluster client (bullmq-cluster.ts).
      useFactory: (config: AppConfig) => {
        useClusterForBullMQ(config);
        return { connection: { url: config.redisUrl, maxRetriesPerRequest: null } };
      },
    }),
    // Producers fail fast while Redis is down instead of queueing commands in memory: a nudge is
    // only a hint (the outbox relay and the sweep re-nudge), and a request must not hang on it.
    ...Object.values(QUEUES).map((name) =>
      BullModule.registerQueueAsync({
        name,
        inject: [AppConfig],
        useFactory: (config: AppConfig) => ({ connection: { url: config.redisUrl, maxRetriesPerRequest: 1, enableOfflineQueue: false }, ...queuePrefix(config, name) }),
      }),
    ),
  ],
  providers: [AllQueues, SessionDispatcher, SessionLinger, AttachmentJobs, WebhookJobs, RunSignals, ...signalsRedisProviders, WorkerPresence, presenceRedisProvider],
  exports: [AllQueues, SessionDispatcher, SessionLinger, AttachmentJobs, WebhookJobs, RunSignals, BullModule, WorkerPresence],
})
export class QueueModule {}
