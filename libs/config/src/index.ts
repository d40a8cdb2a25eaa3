export { AppConfig } from './app-config.js';
export { ConfigModule } from './config.module.js';
export { closeOnSignals } from './shutdown.js';
export { logRedisErrorsQuietly } from './redis-errors.js';
export { REPEATED_CONDITION_LOG_MS, ThrottledLog } from './throttled-log.js';
