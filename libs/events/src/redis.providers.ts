import type { Provider } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '#libs/config';

export const EVENTS_REDIS = Symbol('EVENTS_REDIS');
export const EVENTS_REDIS_BLOCKING = Symbol('EVENTS_REDIS_BLOCKING');

/** Commands: publishing, catch-up reads, stream info. */
export const eventsRedisProvider: Provider = {
  provide: EVENTS_REDIS,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => new Redis(config.redisUrl, { connectionName: 'yuxi-events' }),
};

/** The one blocking XREAD connection of an api process; every SSE subscriber shares it. */
export const eventsRedisBlockingProvider: Provider = {
  provide: EVENTS_REDIS_BLOCKING,
  inject: [AppConfig],
  useFactory: (config: AppConfig) =>
    new Redis(config.redisUrl, { connectionName: 'yuxi-events-reader', maxRetriesPerRequest: null }),
};
