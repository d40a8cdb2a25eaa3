export { RecoveryService, type SweepReport } from './recovery.service.js';
export { RuntimeModule } from './runtime.module.js';
export { SessionDriver } from './session-driver.js';
export { WORKER_ID } from './worker-identity.js';
