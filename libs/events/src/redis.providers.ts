import type { Provider } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig, logRedisErrorsQuietly } from '#libs/config';

export const EVENTS_REDIS = Symbol('EVENTS_REDIS');
export const EVENTS_REDIS_BLOCKING = Symbol('EVENTS_REDIS_BLOCKING');

/**
 * Commands: publishing, catch-up reads, stream info. A command fails after a second instead of
 * waiting out a Redis outage: the outbox keeps what was not published, and callers carry on.
 */
export const eventsRedisProvider: Provider = {
  provide: EVENTS_REDIS,
  inject: [AppConfig],
  useFactory: (config: AppConfig) =>
    logRedisErrorsQuietly(new Redis(config.redisUrl, { connectionName: 'yuxi-events', commandTimeout: 1_000, maxRetriesPerRequest: 1 }), 'events'),
};

/** The one blocking XREAD connection of an api process; every SSE subscriber shares it. */
export const eventsRedisBlockingProvider: Provider = {
  provide: EVENTS_REDIS_BLOCKING,
  inject: [AppConfig],
  useFactory: (config: AppConfig) =>
    logRedisErrorsQuietly(new Redis(config.redisUrl, { connectionName: 'yuxi-events-reader', maxRetriesPerRequest: null }), 'events reader'),
};
