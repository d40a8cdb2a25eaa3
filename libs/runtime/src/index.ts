export { FencingStats } from './fencing-stats.js';
export { OutboxRelay } from './outbox-relay.js';
export { RecoveryService, type SweepReport } from './recovery.service.js';
export { RuntimeModule } from './runtime.module.js';
export { SessionDriver } from './session-driver.js';
export { type NextStep, planNextStep } from './step-plan.js';
export { WORKER_ID } from './worker-identity.js';
