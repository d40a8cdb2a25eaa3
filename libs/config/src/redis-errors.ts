import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { instrumentRedis } from '#libs/metrics';
import { ThrottledLog } from './throttled-log.js';

/**
 * ioredis emits an 'error' event on every failed reconnect; unhandled, each one prints a stack.
 * A Redis outage is one condition, so it is logged once per interval per connection. Its errors
 * are counted in `yuxi_redis_errors_total`, the connection's name as the component.
 */
export function logRedisErrorsQuietly(redis: Redis, name: string): Redis {
  const log = new ThrottledLog(new Logger('Redis'));
  redis.on('error', (error: Error) => log.warn(`${name}: ${error.message}`));
  return instrumentRedis(redis, name.replaceAll(' ', '_'));
}
