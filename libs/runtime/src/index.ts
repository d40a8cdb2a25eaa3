export { FencingStats } from './fencing-stats.js';
export { OutboxRelay } from './outbox-relay.js';
export { RecoveryService, type SweepReport } from './recovery.service.js';
export { RuntimeModule } from './runtime.module.js';
export { SessionDriver } from './session-driver.js';
export { toModelMessages } from './model-context.js';
export { type NextStep, OUTCOME_UNKNOWN, planNextStep, type ToolPolicy } from './step-plan.js';
export { toolPolicy } from './tool-policy.js';
export { WORKER_ID } from './worker-identity.js';
