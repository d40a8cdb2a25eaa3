import { Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
import { type HealthCheckResult, HealthCheckService, type HealthIndicatorFunction, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import type { Worker } from 'bullmq';
import { ThrottledLog } from '#libs/config';
import { dependencyChecks } from '#libs/health';
import { QUEUES, WorkerPresence } from '#libs/queue';
import { FencingStats, WORKER_ID } from '#libs/runtime';
import type { OpsResponse } from './ops-http.js';
import { AutomationsProcessor, FilesProcessor, MaintenanceProcessor, SessionDispatchProcessor, WebhooksProcessor } from './processors.js';

/** Each readiness check fails (its indicator `down`) after this long; the checks run in parallel. */
/** A Redis connection of a consumer that has not come up within this long counts as disconnected. */
const CONNECTION_PROBE_MS = 200;

/**
 * `running`: consuming, both of its Redis connections up. `disconnected`: its loop runs but a
 * connection is down (it resumes by itself). `stopped`: its loop has ended (or never started) —
 * it consumes nothing until the process restarts. `closing`: the worker is shutting down.
 */
export type ConsumerState = 'running' | 'disconnected' | 'stopped' | 'closing';

/**
 * Whether this process's BullMQ consumers run: asked of each BullMQ Worker (its run loop, its
 * closing state, the status of its command and blocking connections), with its last error. The
 * 'error' listener also keeps BullMQ from printing every failed reconnect (one line per interval).
 */
@Injectable()
export class ConsumerHealth {
  private readonly log = new ThrottledLog(new Logger('Consumers'));
  private readonly lastErrors = new Map<string, { message: string; at: string }>();

  constructor(
    private readonly sessions: SessionDispatchProcessor,
    private readonly maintenance: MaintenanceProcessor,
    private readonly files: FilesProcessor,
    private readonly webhooks: WebhooksProcessor,
    private readonly automations: AutomationsProcessor,
  ) {}

  private get consumers(): Record<string, Worker> {
    return {
      [QUEUES.sessions]: this.sessions.worker,
      [QUEUES.maintenance]: this.maintenance.worker,
      [QUEUES.files]: this.files.worker,
      [QUEUES.webhooks]: this.webhooks.worker,
      [QUEUES.automations]: this.automations.worker,
    };
  }

  /**
   * Before the consumers run: their errors are recorded, and their connections wait for Redis.
   * @nestjs/bullmq builds each Worker from its queue's connection options, which fail fast for
   * producers (enableOfflineQueue: false); a consumer's command refused at once is retried by
   * BullMQ's fetch loop without any pause — a loop of microtasks that starves the process (no
   * health answer, no lease renewal, no reconnect) for as long as the connection is down. Queued
   * instead, each retry waits for the next reconnect attempt.
   */
  prepare(): void {
    for (const [queue, worker] of Object.entries(this.consumers)) {
      worker.on('error', (error: Error) => {
        this.lastErrors.set(queue, { message: error.message, at: new Date().toISOString() });
        this.log.warn(`consumer of ${queue}: ${error.message}`, queue);
      });
      const { connection, blockingConnection } = worker.backend;
      for (const c of [connection, blockingConnection]) {
        c?.client.then(
          (client) => {
            client.options.enableOfflineQueue = true;
          },
          () => undefined,
        );
      }
    }
  }

  async states(): Promise<Record<string, ConsumerState>> {
    const entries = await Promise.all(Object.entries(this.consumers).map(async ([queue, worker]) => [queue, await stateOf(worker)] as const));
    return Object.fromEntries(entries);
  }

  async allRunning(): Promise<boolean> {
    return Object.values(await this.states()).every((state) => state === 'running');
  }

  lastError(queue: string): { message: string; at: string } | undefined {
    return this.lastErrors.get(queue);
  }
}

async function stateOf(worker: Worker): Promise<ConsumerState> {
  if (worker.closing) return 'closing';
  if (!worker.isRunning()) return 'stopped';
  const { connection, blockingConnection } = worker.backend;
  const statuses = await Promise.all([connection, blockingConnection].flatMap((c) => (c ? [connectionStatus(c.client)] : [])));
  return statuses.every((status) => status === 'ready') ? 'running' : 'disconnected';
}

/** The ioredis status of a BullMQ connection; its client promise settles once it was first set up. */
async function connectionStatus(client: Promise<{ status: string }>): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      client.then(
        (c) => c.status,
        () => 'failed',
      ),
      new Promise<string>((resolve) => {
        timer = setTimeout(() => resolve('connecting'), CONNECTION_PROBE_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The worker's Terminus health, served on WORKER_HEALTH_PORT (ops-http.ts): `live` (the process
 * runs; also what `/health` answers, with its fencing counters) and `ready` (its Postgres, its
 * Redis, and its consumers running).
 */
@Injectable()
export class WorkerHealth {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly presence: WorkerPresence,
    private readonly consumers: ConsumerHealth,
    private readonly fencing: FencingStats,
  ) {}

  async live(): Promise<OpsResponse> {
    const response = await this.run([() => this.indicators.check('process').up({ pid: process.pid, uptime_s: Math.round(process.uptime()) })]);
    return {
      ...response,
      body: { ...(response.body as object), worker_id: WORKER_ID, fenced_writes: this.fencing.fencedWrites, fenced_publishes: this.fencing.fencedPublishes },
    };
  }

  ready(): Promise<OpsResponse> {
    return this.run([...dependencyChecks(this.database, this.indicators, this.presence), () => this.consumerCheck()]);
  }

  private async consumerCheck() {
    const check = this.indicators.check('consumers');
    const states = await this.consumers.states();
    const notRunning = Object.entries(states).filter(([, state]) => state !== 'running');
    if (notRunning.length === 0) return check.up(states);
    const errors = Object.fromEntries(notRunning.flatMap(([queue]) => (this.consumers.lastError(queue) ? [[queue, this.consumers.lastError(queue)]] : [])));
    return check.down({ ...states, message: `not running: ${notRunning.map(([queue, state]) => `${queue} (${state})`).join(', ')}`, last_errors: errors });
  }

  private async run(checks: HealthIndicatorFunction[]): Promise<OpsResponse> {
    try {
      return { status: 200, body: await this.health.check(checks) };
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      return { status: 503, body: error.getResponse() as HealthCheckResult };
    }
  }
}
