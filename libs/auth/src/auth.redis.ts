import type { Provider } from '@nestjs/common';
import { AppConfig, createRedisClient } from '#libs/config';

export const AUTH_REDIS = Symbol('AUTH_REDIS');
export const AUTH_SUBSCRIBER = Symbol('AUTH_SUBSCRIBER');

/** Rate limits, stream slots and invalidation notices: commands fail fast instead of queueing through an outage. */
export const authRedisProvider: Provider = {
  provide: AUTH_REDIS,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => createRedisClient(config, 'auth', { connectionName: 'yuxi-auth', commandTimeout: 1_000, maxRetriesPerRequest: 1, enableOfflineQueue: false }),
};

/** The credential invalidation channel (a subscribed connection takes no other commands); connected by AuthInvalidations. */
export const authSubscriberProvider: Provider = {
  provide: AUTH_SUBSCRIBER,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => createRedisClient(config, 'auth subscriber', { lazyConnect: true, connectionName: 'yuxi-auth-sub' }),
};
