export { RetentionModule } from './retention.module.js';
export { SessionTtlSweep } from './session-ttl-sweep.js';
export { RETENTION_BATCHES_PER_TICK, RETENTION_TASKS, RetentionSweep, type RetentionTickReport } from './retention-sweep.js';
export { SessionPurge } from './session-purge.js';
export { isPurgeDue, PURGE_FAILED_RETRY_S, PURGE_PIN_RECHECK_S, PURGE_SESSIONS_PER_BATCH, purgeBatchOutcome, SESSION_PURGE_STEPS, type SessionPurgeStep } from './session-purge-plan.js';
export { RESUMMED_OWNERS_PER_BATCH, STORAGE_SESSIONS_PER_BATCH, StorageAccounting } from './storage-accounting.js';
