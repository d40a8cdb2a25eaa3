import type { Provider } from '@nestjs/common';
import { AppConfig, createRedisClient } from '#libs/config';

export const AUTH_REDIS = Symbol('AUTH_REDIS');

/** Rate limits, stream slots and revocation markers: commands fail fast instead of queueing through an outage. */
export const authRedisProvider: Provider = {
  provide: AUTH_REDIS,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => createRedisClient(config, 'auth', { connectionName: 'yuxi-auth', commandTimeout: 1_000, maxRetriesPerRequest: 1, enableOfflineQueue: false }),
};
