import type { HealthIndicatorFunction, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { WorkerPresence } from '#libs/queue';

/**
 * What the api's and the worker's readiness share: both need Postgres and Redis to do any work.
 * Each process adds its own check (the api: a live, consuming worker; the worker: its consumers).
 */

/** Each readiness check fails (its indicator `down`) after this long; the checks run in parallel. */
export const READY_CHECK_TIMEOUT_MS = 2_000;

/** The `database` and `redis` checks (Redis through the presence connection every process holds). */
export function dependencyChecks(database: TypeOrmHealthIndicator, indicators: HealthIndicatorService, presence: Pick<WorkerPresence, 'ping'>): HealthIndicatorFunction[] {
  return [
    () => database.pingCheck('database').withTimeout(READY_CHECK_TIMEOUT_MS),
    () =>
      indicators
        .check('redis')
        .attempt(() => presence.ping())
        .withTimeout(READY_CHECK_TIMEOUT_MS),
  ];
}
