import { Logger } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import { instrumentRedis } from '#libs/metrics';
import { ThrottledLog } from './throttled-log.js';

/**
 * ioredis emits an 'error' event on every failed reconnect; unhandled, each one prints a stack.
 * A Redis outage is one condition, so it is logged once per interval per connection. Its errors
 * are counted in `yuxi_redis_errors_total`, the connection's name as the component.
 */
export function logRedisErrorsQuietly<R extends Redis | Cluster>(redis: R, name: string): R {
  return instrumentRedis(logErrorsQuietly(redis, name), name.replaceAll(' ', '_'));
}

/**
 * The same for anything that re-emits its connections' errors (BullMQ queues and workers): an
 * 'error' event nobody listens to is printed with its stack (or crashes the process), once per
 * failed reconnect.
 */
export function logErrorsQuietly<T extends { on(event: 'error', listener: (error: Error) => void): unknown }>(emitter: T, name: string): T {
  const log = new ThrottledLog(new Logger('Redis'));
  emitter.on('error', (error: Error) => log.warn(`${name}: ${error.message}`));
  return emitter;
}
