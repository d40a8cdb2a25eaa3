import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, type HealthCheckResult, HealthCheckService, type HealthIndicatorFunction, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Response } from 'express';
import { PublicRoute } from '#libs/auth';
import { dependencyChecks, READY_CHECK_TIMEOUT_MS } from '#libs/health';
import { WorkerPresence } from '#libs/queue';

/** Terminus' result: each check by name (`database`, `redis`, `workers`; `process` for liveness). */
const HEALTH_SCHEMA = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok', 'error', 'shutting_down'] },
    info: { type: 'object', additionalProperties: { type: 'object', properties: { status: { type: 'string', enum: ['up', 'down'] } }, additionalProperties: true } },
    error: { type: 'object', additionalProperties: { type: 'object', additionalProperties: true } },
    details: { type: 'object', additionalProperties: { type: 'object', additionalProperties: true } },
  },
};

const LIVE_EXAMPLE = { status: 'ok', info: { process: { status: 'up', pid: 4242, uptime_s: 73 } }, error: {}, details: { process: { status: 'up', pid: 4242, uptime_s: 73 } } };
const READY_CHECKS = { database: { status: 'up' }, redis: { status: 'up' }, workers: { status: 'up', live: 1, consuming: 1 } };
const READY_EXAMPLE = { status: 'ok', info: READY_CHECKS, error: {}, details: READY_CHECKS };
const NO_WORKER = { status: 'down', live: 0, consuming: 0, message: 'no worker announced itself within the last 15000 ms' };
const NOT_READY_EXAMPLE = {
  status: 'error',
  info: { database: { status: 'up' }, redis: { status: 'up' } },
  error: { workers: NO_WORKER },
  details: { database: { status: 'up' }, redis: { status: 'up' }, workers: NO_WORKER },
};

/**
 * Terminus health of the api, public (no credentials):
 * `/health/live` says the process serves HTTP (no dependency is asked), `/health/ready` that it can
 * do its work — Postgres and Redis answer and at least one worker is alive and consuming.
 * `/health` is the liveness alias the scripts wait on. 503 with the same body when a check fails.
 */
@ApiTags('operations')
@PublicRoute()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly presence: WorkerPresence,
  ) {}

  @Get()
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOperation({ operationId: 'getHealth', summary: 'Liveness (alias of /health/live)', description: 'The same answer as /health/live; the start scripts wait on it.' })
  @ApiOkResponse({ schema: HEALTH_SCHEMA, description: 'The process serves HTTP.', example: LIVE_EXAMPLE })
  alias(@Res({ passthrough: true }) res: Response): Promise<HealthCheckResult> {
    return this.live(res);
  }

  @Get('live')
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOperation({
    operationId: 'getLiveness',
    summary: 'Liveness',
    description: 'Whether the process serves HTTP; no dependency is asked, so an orchestrator restarts the process only when it is stuck itself.',
  })
  @ApiOkResponse({ schema: HEALTH_SCHEMA, description: 'The process serves HTTP.', example: LIVE_EXAMPLE })
  live(@Res({ passthrough: true }) res: Response): Promise<HealthCheckResult> {
    return run(res, this.health, [() => this.indicators.check('process').up({ pid: process.pid, uptime_s: Math.round(process.uptime()) })]);
  }

  @Get('ready')
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOperation({
    operationId: 'getReadiness',
    summary: 'Readiness',
    description: `Whether this api can do its work: Postgres and Redis answer, and at least one worker is alive and consuming. Each check gives up after ${READY_CHECK_TIMEOUT_MS} ms.`,
  })
  @ApiOkResponse({ schema: HEALTH_SCHEMA, description: 'Every check is up.', example: READY_EXAMPLE })
  @ApiServiceUnavailableResponse({
    description: 'A check failed; `error` names it.',
    content: { 'application/json': { schema: HEALTH_SCHEMA, example: NOT_READY_EXAMPLE } },
  })
  ready(@Res({ passthrough: true }) res: Response): Promise<HealthCheckResult> {
    return run(res, this.health, [...dependencyChecks(this.database, this.indicators, this.presence), () => this.workers()]);
  }

  /** Up when at least one worker announced itself within the last three heartbeats and consumes. */
  private async workers() {
    const check = this.indicators.check('workers');
    let live;
    try {
      live = await withTimeout(this.presence.live(), READY_CHECK_TIMEOUT_MS);
    } catch (error) {
      return check.down({ message: `worker presence unreadable: ${error instanceof Error ? error.message : String(error)}` });
    }
    const consuming = live.filter((worker) => worker.consuming).length;
    if (consuming > 0) return check.up({ live: live.length, consuming });
    return check.down({
      live: live.length,
      consuming,
      message: live.length === 0 ? `no worker announced itself within the last ${this.presence.ttlMs} ms` : 'no live worker is consuming its queues',
    });
  }
}

/** Terminus answers a failed check with a 503 exception: the same body is sent, with that status. */
async function run(res: Response, health: HealthCheckService, checks: HealthIndicatorFunction[]): Promise<HealthCheckResult> {
  try {
    return await health.check(checks);
  } catch (error) {
    if (!(error instanceof ServiceUnavailableException)) throw error;
    res.status(503);
    return error.getResponse() as HealthCheckResult;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timeout of ${ms}ms exceeded`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
