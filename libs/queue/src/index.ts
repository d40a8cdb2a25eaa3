export { JOBS, type JobName, type JobPayloads, QUEUE_JOBS, QUEUES } from './queue-names.js';
export { QueueModule } from './queue.module.js';
export { SessionDispatcher } from './session-dispatcher.js';
export { AttachmentJobs } from './attachment-jobs.js';
export { WebhookJobs } from './webhook-jobs.js';
export { CALL_MESSAGE_INLINE_BYTES, RunSignals } from './run-signals.js';
export { presenceKeys, type WorkerAnnouncement, WorkerPresence, workerPresenceKey, WORKERS_SET } from './worker-presence.js';
export { queuePrefix } from './bullmq-cluster.js';
export { LeanPolling } from './lean-polling.js';
