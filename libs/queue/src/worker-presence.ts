import { hostname } from 'node:os';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { AppConfig, createRedisClient, isCluster, type RedisClient, ThrottledLog } from '#libs/config';

/** The ids of the workers that announced themselves; an id whose key expired is pruned by readers. */
export const WORKERS_SET = 'yuxi:workers';
/** One key per worker, refreshed every WORKER_HEARTBEAT_MS, expiring after three missed beats. */
export const workerPresenceKey = (workerId: string): string => `${WORKERS_SET}:${workerId}`;

/**
 * The set and the per-worker keys, which MULTI and MGET use together. On one server the names are
 * those above, unchanged, so that api and worker replicas of different versions still agree
 * during a rolling deploy. On a cluster they share the hash tag `{workers}`, so that they live in
 * one slot (a multi-key command across slots is refused there).
 */
export function presenceKeys(clustered: boolean): { set: string; worker: (workerId: string) => string } {
  if (!clustered) return { set: WORKERS_SET, worker: workerPresenceKey };
  return { set: 'yuxi:{workers}', worker: (workerId) => `yuxi:{workers}:${workerId}` };
}
export const PRESENCE_REDIS = Symbol('PRESENCE_REDIS');

/** Lazy: a process that neither announces nor reads presence never opens it. */
export const presenceRedisProvider: Provider = {
  provide: PRESENCE_REDIS,
  inject: [AppConfig],
  useFactory: (config: AppConfig) =>
    createRedisClient(config, 'presence', { lazyConnect: true, connectionName: 'yuxi-presence', commandTimeout: 1_000, maxRetriesPerRequest: 1 }),
};

/** What a worker says about itself in each heartbeat. */
export interface WorkerAnnouncement {
  id: string;
  host: string;
  pid: number;
  started_at: string;
  /** Whether its queue consumers were running at the last beat. */
  consuming: boolean;
  at: string;
}

/**
 * Which workers are alive, across the fleet: each worker writes `yuxi:workers:<id>` (a JSON
 * announcement with a TTL of three heartbeats, so Redis itself forgets a worker that died) and adds
 * its id to the set `yuxi:workers` (so readers need no SCAN). A worker stopping cleanly deletes
 * its key at once. The api's readiness counts the live, consuming ones.
 */
@Injectable()
export class WorkerPresence implements OnApplicationShutdown {
  private readonly log = new ThrottledLog(new Logger(WorkerPresence.name));
  private timer: NodeJS.Timeout | null = null;
  private beat: Promise<void> | null = null;
  private announced: string | null = null;
  private readonly keys: ReturnType<typeof presenceKeys>;

  constructor(
    @Inject(PRESENCE_REDIS) private readonly redis: RedisClient,
    private readonly config: AppConfig,
  ) {
    this.keys = presenceKeys(isCluster(redis));
  }

  get ttlMs(): number {
    return this.config.workerHeartbeatMs * 3;
  }

  /** Worker: announces `workerId` now and every heartbeat; `consuming` is asked at each beat. */
  start(workerId: string, consuming: () => Promise<boolean>): void {
    if (this.timer) return;
    this.announced = workerId;
    const startedAt = new Date().toISOString();
    const tick = (): void => {
      if (this.beat) return;
      this.beat = this.announce(workerId, startedAt, consuming).finally(() => (this.beat = null));
    };
    tick();
    this.timer = setInterval(tick, this.config.workerHeartbeatMs);
    this.timer.unref();
  }

  /** Worker shutdown: no more beats, and the announcement is withdrawn (best effort, bounded). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beat;
    const id = this.announced;
    this.announced = null;
    if (!id) return;
    await this.redis
      .multi()
      .del(this.keys.worker(id))
      .srem(this.keys.set, id)
      .exec()
      .catch((error: unknown) => this.log.warn(`could not withdraw the announcement of ${id} (it expires in ${this.ttlMs} ms): ${String(error)}`));
  }

  /** The workers whose announcement has not expired; ids that expired are pruned from the set. */
  async live(): Promise<WorkerAnnouncement[]> {
    const ids = await this.redis.smembers(this.keys.set);
    if (ids.length === 0) return [];
    const values = await this.redis.mget(ids.map(this.keys.worker));
    // A worker that announces again right after this read re-adds itself at its next beat.
    const gone = ids.filter((_, i) => values[i] === null);
    if (gone.length > 0) await this.redis.srem(this.keys.set, ...gone).catch(() => undefined);
    return values.flatMap((value) => {
      if (value === null) return [];
      try {
        return [JSON.parse(value) as WorkerAnnouncement];
      } catch {
        return [];
      }
    });
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  private async announce(id: string, startedAt: string, consuming: () => Promise<boolean>): Promise<void> {
    try {
      const announcement: WorkerAnnouncement = { id, host: hostname(), pid: process.pid, started_at: startedAt, consuming: await consuming(), at: new Date().toISOString() };
      await this.redis.multi().set(this.keys.worker(id), JSON.stringify(announcement), 'PX', this.ttlMs).sadd(this.keys.set, id).exec();
    } catch (error) {
      this.log.warn(`worker heartbeat failed: ${String(error)}`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.redis.disconnect();
  }
}
