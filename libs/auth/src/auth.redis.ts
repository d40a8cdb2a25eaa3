import type { Provider } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig, logRedisErrorsQuietly } from '#libs/config';

export const AUTH_REDIS = Symbol('AUTH_REDIS');
export const AUTH_REDIS_SUBSCRIBER = Symbol('AUTH_REDIS_SUBSCRIBER');

/** Rate limits, stream slots and revocation notices: commands fail fast instead of queueing through an outage. */
export const authRedisProvider: Provider = {
  provide: AUTH_REDIS,
  inject: [AppConfig],
  useFactory: (config: AppConfig) =>
    logRedisErrorsQuietly(new Redis(config.redisUrl, { connectionName: 'yuxi-auth', commandTimeout: 1_000, maxRetriesPerRequest: 1, enableOfflineQueue: false }), 'auth'),
};

/** Hears revocations from every api replica (a subscriber connection takes no other commands). */
export const authRedisSubscriberProvider: Provider = {
  provide: AUTH_REDIS_SUBSCRIBER,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => logRedisErrorsQuietly(new Redis(config.redisUrl, { connectionName: 'yuxi-auth-revocations', maxRetriesPerRequest: null }), 'auth revocations'),
};
