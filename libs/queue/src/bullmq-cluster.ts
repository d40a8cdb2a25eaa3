import { createIORedisClient, RedisConnection } from 'bullmq';
import { newRedisClient, type RedisSettings } from '#libs/config';

/**
 * The prefix of a queue's keys. BullMQ's scripts touch several keys of a queue at once, so on a
 * cluster they must share one slot: the prefix carries the queue's name as a hash tag
 * (`bull:{session-dispatch}:session-dispatch:wait`), BullMQ's documented cluster set-up, and each
 * queue gets its own tag so the three queues may live on different nodes. On one server the prefix
 * stays BullMQ's default `bull`: changing it would orphan the jobs, schedules and counters that
 * existing deployments hold under it. A cluster deployment starts on an empty keyspace (no
 * release ran on one before), and jobs are only nudges anyway: Postgres holds the work, and the
 * recovery sweep nudges again what a lost job would have.
 */
export function queuePrefix(settings: RedisSettings, queueName: string): { prefix?: string } {
  return settings.redisCluster ? { prefix: `bull:{${queueName}}` } : {};
}

/**
 * On a cluster, BullMQ builds its connections through this factory (its documented hook for
 * another client): a cluster client made like ours, with the options BullMQ derived for that
 * connection (maxRetriesPerRequest null on blocking ones, a name on the worker's blocking one).
 * The queues keep passing plain options, so BullMQ owns and closes every client it opens, as it
 * does on one server. One process talks to one Redis, so the process-wide hook is set once, by the
 * queue module's root factory before any queue or worker exists; on one server it is left unset.
 */
export function useClusterForBullMQ(settings: RedisSettings): void {
  if (!settings.redisCluster) return;
  RedisConnection.clientFactory = (options) =>
    createIORedisClient(
      newRedisClient(settings, {
        connectionName: options.connectionName,
        maxRetriesPerRequest: options.maxRetriesPerRequest,
        enableOfflineQueue: options.enableOfflineQueue,
      }),
    );
}
