import { type Cluster, type Redis, ReplyError } from 'ioredis';
import { type Metrics, metrics as processMetrics } from './metrics.js';

type Command = Parameters<Redis['sendCommand']>[0];

/**
 * Counts a connection's failures as `yuxi_redis_errors_total{component}`: its 'error' events
 * (failed connects and reconnects) and every command rejected for want of Redis (timed out,
 * connection closed, offline). Redis's own error replies (a script's NOSCRIPT, a missing key) are
 * answers, not failures; commands flushed by a deliberate disconnect (shutdown) are not counted.
 */
export function instrumentRedis<R extends Redis | Cluster>(redis: R, component: string, target: Metrics = processMetrics): R {
  redis.on('error', () => target.redisError(component));
  const seen = new WeakSet<Command>();
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command: Command, ...rest: unknown[]): unknown => {
    // A command queued while offline is sent again on connect: counted once.
    if (!seen.has(command)) {
      seen.add(command);
      command.promise.catch((error: unknown) => {
        if (!(error instanceof ReplyError) && redis.status !== 'end') target.redisError(component);
      });
    }
    return (send as (command: Command, ...rest: unknown[]) => unknown)(command, ...rest);
  };
  return redis;
}
