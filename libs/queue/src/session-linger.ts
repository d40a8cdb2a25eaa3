import { Inject, Injectable } from '@nestjs/common';
import { AppConfig, type RedisClient } from '#libs/config';
import { SIGNALS_PUBLISHER, WAKE_CHANNEL_PREFIX } from './run-signals.js';

/** The session's linger key: its id as the hash tag, like every other per-session key, so a cluster keeps it in the session's slot. */
export const lingerKey = (sessionId: string): string => `yuxi:linger:{${sessionId}}`;

/**
 * Reads who the session lingers on and wakes that worker, in one round trip: the number of
 * listeners that received the session id (0: no linger, or the worker is gone, its subscription
 * closed with its connection).
 */
const WAKE_SCRIPT = `
local address = redis.call('GET', KEYS[1])
if not address then return 0 end
return redis.call('PUBLISH', ARGV[1] .. address, ARGV[2])`;

type WakingClient = RedisClient & { yuxiWakeLingering(key: string, channelPrefix: string, sessionId: string): Promise<number> };

/**
 * Sticky workers: the worker that drove a session keeps it for WORKER_LINGER_MS, and a nudge in
 * that window reaches it by pub/sub instead of a BullMQ job (about 50 Redis commands fewer per
 * turn). A hint, never a lock: who drives a session is still decided in Postgres, and whenever the
 * wake-up does not reach a live listener the caller sends the job as before.
 */
@Injectable()
export class SessionLinger {
  private readonly client: WakingClient;

  constructor(@Inject(SIGNALS_PUBLISHER) publisher: RedisClient, private readonly config: AppConfig) {
    publisher.defineCommand('yuxiWakeLingering', { numberOfKeys: 1, lua: WAKE_SCRIPT });
    this.client = publisher as WakingClient;
  }

  get enabled(): boolean {
    return this.config.workerLingerMs > 0;
  }

  /** True when a worker listening for the session received the wake-up; false (send the job) otherwise, an error included. */
  async wake(sessionId: string): Promise<boolean> {
    if (!this.enabled) return false;
    try {
      return (await this.client.yuxiWakeLingering(lingerKey(sessionId), WAKE_CHANNEL_PREFIX, sessionId)) > 0;
    } catch {
      return false;
    }
  }

  /** Marks the session as lingering on the worker at `address` for WORKER_LINGER_MS; a failure only costs the next input a job. */
  async linger(sessionId: string, address: string): Promise<void> {
    if (!this.enabled) return;
    await this.client.set(lingerKey(sessionId), address, 'PX', this.config.workerLingerMs).catch(() => undefined);
  }
}
