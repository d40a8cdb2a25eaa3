import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';

const INTERVAL_MS = 10_000;

/**
 * ioredis emits an 'error' event on every failed reconnect; unhandled, each one prints a stack.
 * A Redis outage is one condition, so it is logged once per interval per connection.
 */
export function logRedisErrorsQuietly(redis: Redis, name: string): Redis {
  const logger = new Logger('Redis');
  let last = 0;
  redis.on('error', (error: Error) => {
    const now = Date.now();
    if (now - last < INTERVAL_MS) return;
    last = now;
    logger.warn(`${name}: ${error.message}`);
  });
  return redis;
}
