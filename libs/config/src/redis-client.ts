import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { RedisClusterSettings } from './app-config.js';
import { logRedisErrorsQuietly } from './redis-errors.js';
import { groupBySlot } from './redis-slots.js';

/** A connection of ours: one Redis server, or a Redis Cluster (REDIS_CLUSTER_NODES). */
export type RedisClient = Redis | Cluster;

/** Where Redis is: the part of AppConfig that every client is made from. */
export interface RedisSettings {
  redisUrl: string;
  redisCluster: RedisClusterSettings | null;
}

/** The options our clients set; for a cluster they apply to the cluster client and its node connections. */
export type RedisClientOptions = Pick<RedisOptions, 'connectionName' | 'commandTimeout' | 'maxRetriesPerRequest' | 'enableOfflineQueue' | 'lazyConnect'>;

/**
 * The one place a Redis connection is made (lint forbids `new Redis` / `new Cluster` elsewhere):
 * a server at REDIS_URL, exactly as before, or a cluster client seeded with REDIS_CLUSTER_NODES.
 * Its errors are logged once per interval and counted under `name` (logRedisErrorsQuietly).
 */
export function createRedisClient(settings: RedisSettings, name: string, options: RedisClientOptions): RedisClient {
  return logRedisErrorsQuietly(newRedisClient(settings, options), name);
}

/** The same without the error listener: for BullMQ, which listens to its clients and re-emits their errors. */
export function newRedisClient(settings: RedisSettings, options: RedisClientOptions): RedisClient {
  if (!settings.redisCluster) return new Redis(settings.redisUrl, options);
  return new Cluster(settings.redisCluster.nodes, clusterOptions(settings.redisUrl, options));
}

export function isCluster(client: RedisClient): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/**
 * A cluster client's options. `lazyConnect` and `enableOfflineQueue` are the cluster client's
 * own: with the offline queue off, a command fails at once while the cluster is not ready, as a
 * single connection's does while it is down. The node connections keep ioredis' defaults there:
 * ioredis opens them lazily on their first command, which an offline queue turned off would
 * refuse. Credentials and TLS come from REDIS_URL and apply to every node.
 */
export function clusterOptions(redisUrl: string, options: RedisClientOptions): ClusterOptions {
  const { lazyConnect, enableOfflineQueue, ...perNode } = options;
  return {
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    redisOptions: { ...urlCredentials(redisUrl), ...perNode },
  };
}

/** User, password and TLS of a `redis://` or `rediss://` URL; a cluster has database 0 only. */
export function urlCredentials(redisUrl: string): Pick<RedisOptions, 'username' | 'password' | 'tls'> {
  const url = new URL(redisUrl);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw new Error(`REDIS_URL must be a redis:// or rediss:// URL, got "${url.protocol}"`);
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && db !== '0') throw new Error(`REDIS_URL selects database ${db}: a Redis Cluster has database 0 only`);
  return {
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: { servername: url.hostname } } : {}),
  };
}

/**
 * How many of `keys` exist. One EXISTS on a single server (as before); on a cluster one per slot,
 * in parallel: a multi-key command across slots is refused there (CROSSSLOT).
 */
export async function countExisting(client: RedisClient, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  if (!isCluster(client)) return client.exists(...keys);
  const counts = await Promise.all(groupBySlot(keys).map((group) => client.exists(...group.map((i) => keys[i] as string))));
  return counts.reduce((sum, count) => sum + count, 0);
}

/**
 * GET of each key, in order. One pipeline on a single server (as before); on a cluster one
 * pipeline per slot, in parallel: ioredis refuses a cluster pipeline whose keys span nodes.
 */
export async function getEach(client: RedisClient, keys: string[]): Promise<(string | null)[]> {
  const groups = isCluster(client) ? groupBySlot(keys) : [keys.map((_, i) => i)];
  const values: (string | null)[] = keys.map(() => null);
  await Promise.all(
    groups.map(async (group) => {
      const pipeline = client.pipeline();
      for (const i of group) pipeline.get(keys[i] as string);
      const results = (await pipeline.exec()) ?? [];
      group.forEach((keyIndex, i) => {
        const [error, value] = results[i] ?? [null, null];
        if (error) throw error;
        values[keyIndex] = value === undefined ? null : (value as string | null);
      });
    }),
  );
  return values;
}
