export { RetentionModule } from './retention.module.js';
export { SessionTtlSweep } from './session-ttl-sweep.js';
export { RETENTION_BATCHES_PER_TICK, RETENTION_TASKS, RetentionSweep, type RetentionTickReport } from './retention-sweep.js';
