export { RetentionModule } from './retention.module.js';
export { RETENTION_BATCHES_PER_TICK, RETENTION_TASKS, RetentionSweep, type RetentionTickReport } from './retention-sweep.js';
