export { AppConfig, type StorageSettings } from './app-config.js';
export { ConfigModule } from './config.module.js';
export { closeOnSignals } from './shutdown.js';
export { logErrorsQuietly, logRedisErrorsQuietly } from './redis-errors.js';
export { REPEATED_CONDITION_LOG_MS, ThrottledLog } from './throttled-log.js';
export { currentLogContext, httpLogger, LOG_REDACT_PATHS, type LogFields, loggingModule, logSettings, pinoOptions, rootLogger, setLogContext, withLogContext } from './logging.js';
export { MAX_STREAM_SHARDS, parseRedisNodes, type RedisClusterSettings, type RedisNode } from './app-config.js';
export { clusterOptions, countExisting, createRedisClient, getEach, isCluster, newRedisClient, type RedisClient, type RedisClientOptions, type RedisSettings, urlCredentials } from './redis-client.js';
export { CLUSTER_SLOTS, crc16, groupBySlot, hashTagOf, keySlot } from './redis-slots.js';
