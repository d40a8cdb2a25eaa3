import type { Provider } from '@nestjs/common';
import { AppConfig, createRedisClient, type RedisClient } from '#libs/config';
import { StreamKeys } from './stream-keys.js';

export const EVENTS_REDIS = Symbol('EVENTS_REDIS');
export const EVENTS_REDIS_BLOCKING = Symbol('EVENTS_REDIS_BLOCKING');

/**
 * Commands: publishing, catch-up reads, stream info. A command fails after a second instead of
 * waiting out a Redis outage: the outbox keeps what was not published, and callers carry on.
 */
export const eventsRedisProvider: Provider = {
  provide: EVENTS_REDIS,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => createRedisClient(config, 'events', { connectionName: 'yuxi-events', commandTimeout: 1_000, maxRetriesPerRequest: 1 }),
};

/** The keys of session streams: hash-tagged by session on one server, by shard on a cluster (stream-keys.ts). */
export const streamKeysProvider: Provider = {
  provide: StreamKeys,
  inject: [AppConfig],
  useFactory: (config: AppConfig) => new StreamKeys(config.redisCluster?.streamShards ?? null),
};

/** The blocking XREAD connection of each reader group of the hub (EventStreamHub). */
export interface ReaderConnections {
  /** The connection of a group, opened on first use; the same one for every later call. */
  of(group: number): RedisClient;
  /** Closes every connection opened. */
  close(): void;
}

/**
 * On one server: the one blocking connection of an api process, opened at start as before; every
 * SSE subscriber shares it. On a cluster: one per event-stream shard that has subscribers here,
 * opened when the first arrives, so at most REDIS_CLUSTER_STREAM_SHARDS, whatever the subscribers.
 */
export const eventsRedisBlockingProvider: Provider = {
  provide: EVENTS_REDIS_BLOCKING,
  inject: [AppConfig],
  useFactory: (config: AppConfig): ReaderConnections => {
    const open = (name: string) => createRedisClient(config, 'events reader', { connectionName: name, maxRetriesPerRequest: null });
    const opened = new Map<number, RedisClient>();
    if (!config.redisCluster) opened.set(0, open('yuxi-events-reader'));
    return {
      of(group) {
        let connection = opened.get(config.redisCluster ? group : 0);
        if (!connection) {
          connection = open(`yuxi-events-reader-${group}`);
          opened.set(group, connection);
        }
        return connection;
      },
      close() {
        for (const connection of opened.values()) connection.disconnect();
      },
    };
  },
};
