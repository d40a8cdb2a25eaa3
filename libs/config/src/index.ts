export { AppConfig, type StorageSettings } from './app-config.js';
export { ConfigModule } from './config.module.js';
export { closeOnSignals } from './shutdown.js';
export { logErrorsQuietly, logRedisErrorsQuietly } from './redis-errors.js';
export { REPEATED_CONDITION_LOG_MS, ThrottledLog } from './throttled-log.js';
export { currentLogContext, httpLogger, LOG_REDACT_PATHS, type LogFields, loggingModule, logSettings, pinoOptions, rootLogger, setLogContext, withLogContext } from './logging.js';
