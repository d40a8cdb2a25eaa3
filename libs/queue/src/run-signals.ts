import { Inject, Injectable, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { AppConfig, createRedisClient, type RedisClient } from '#libs/config';

const CANCEL_CHANNEL = 'yuxi:run-cancel';
const STEER_CHANNEL = 'yuxi:session-steer';
/** Messages between workers about a call one of them holds open (an MCP call waiting for a user's answer). */
const CALL_CHANNEL = 'yuxi:held-call';
const SUBSCRIBE_TIMEOUT_MS = 1_000;
export const SIGNALS_PUBLISHER = Symbol('SIGNALS_PUBLISHER');
export const SIGNALS_SUBSCRIBER = Symbol('SIGNALS_SUBSCRIBER');

/** Lazy: an api process only publishes, so its subscriber connection is never opened. */
export const signalsRedisProviders: Provider[] = [
  {
    provide: SIGNALS_PUBLISHER,
    inject: [AppConfig],
    useFactory: (config: AppConfig) =>
      createRedisClient(config, 'signals', { lazyConnect: true, connectionName: 'yuxi-signals', commandTimeout: 1_000, maxRetriesPerRequest: 1 }),
  },
  {
    provide: SIGNALS_SUBSCRIBER,
    inject: [AppConfig],
    useFactory: (config: AppConfig) => createRedisClient(config, 'signals subscriber', { lazyConnect: true, connectionName: 'yuxi-signals-sub' }),
  },
];

/**
 * Prompt cancellation and steering across processes: the api publishes a run or session id, and
 * the worker holding it aborts its model call or yields at the next safe boundary. Pub/sub is best
 * effort; run heartbeats also read the durable state (cancel flag, pending steers), so a lost
 * signal only delays the reaction to the next heartbeat.
 */
@Injectable()
export class RunSignals implements OnApplicationShutdown {
  private readonly handlers = new Map<string, () => void>();
  private readonly steerHandlers = new Map<string, () => void>();
  private readonly callHandlers = new Map<string, (message: unknown) => void>();
  private subscribing: Promise<unknown> | null = null;

  constructor(
    @Inject(SIGNALS_PUBLISHER) private readonly publisher: RedisClient,
    @Inject(SIGNALS_SUBSCRIBER) private readonly subscriber: RedisClient,
  ) {}

  async requestCancel(runId: string): Promise<void> {
    await this.publisher.publish(CANCEL_CHANNEL, runId);
  }

  /** Tells the worker driving the session that a steer input is waiting for its next safe boundary. */
  async announceSteer(sessionId: string): Promise<void> {
    await this.publisher.publish(STEER_CHANNEL, sessionId);
  }

  /** Calls `handler` when a cancel for `runId` arrives; returns the unsubscribe function. */
  async onCancel(runId: string, handler: () => void): Promise<() => void> {
    await this.subscribe();
    this.handlers.set(runId, handler);
    // Only its own handler: a newer run of the same id or session may have replaced it.
    return () => {
      if (this.handlers.get(runId) === handler) this.handlers.delete(runId);
    };
  }

  /** Calls `handler` when a steer for `sessionId` is announced; returns the unsubscribe function. */
  async onSteer(sessionId: string, handler: () => void): Promise<() => void> {
    await this.subscribe();
    this.steerHandlers.set(sessionId, handler);
    return () => {
      if (this.steerHandlers.get(sessionId) === handler) this.steerHandlers.delete(sessionId);
    };
  }

  /**
   * Sends `message` (JSON) to whichever worker listens at `address` (onCallMessage); false when
   * the publish failed (Redis unreachable). Nobody listening is not an error here: the protocol
   * built on it says who answers (test the answer, not the publish).
   */
  async sendCallMessage(address: string, message: object): Promise<boolean> {
    try {
      await this.publisher.publish(CALL_CHANNEL, JSON.stringify({ to: address, body: message }));
      return true;
    } catch {
      return false;
    }
  }

  /** Calls `handler` with each message sent to `address`; returns the unsubscribe function. */
  async onCallMessage(address: string, handler: (message: unknown) => void): Promise<() => void> {
    await this.subscribe();
    this.callHandlers.set(address, handler);
    return () => {
      if (this.callHandlers.get(address) === handler) this.callHandlers.delete(address);
    };
  }

  private onMessage(channel: string, text: string): void {
    if (channel !== CALL_CHANNEL) return (channel === STEER_CHANNEL ? this.steerHandlers : this.handlers).get(text)?.();
    let parsed: { to?: unknown; body?: unknown };
    try {
      parsed = JSON.parse(text) as { to?: unknown; body?: unknown };
    } catch {
      return;
    }
    if (typeof parsed.to === 'string') this.callHandlers.get(parsed.to)?.(parsed.body);
  }

  private async subscribe(): Promise<void> {
    if (!this.subscribing) {
      this.subscriber.removeAllListeners('message');
      this.subscriber.on('message', (channel: string, text: string) => this.onMessage(channel, text));
      // A failed subscribe is not cached: the next caller tries again. It is bounded in time: while
      // Redis is down, runs go on and the heartbeat's durable reads stand in for the signals.
      this.subscribing = Promise.race([
        this.subscriber.subscribe(CANCEL_CHANNEL, STEER_CHANNEL, CALL_CHANNEL),
        new Promise((_, reject) => setTimeout(() => reject(new Error('signal subscription timed out')), SUBSCRIBE_TIMEOUT_MS).unref()),
      ]).catch((error: unknown) => {
        this.subscribing = null;
        throw error;
      });
    }
    await this.subscribing;
  }

  async onApplicationShutdown(): Promise<void> {
    this.publisher.disconnect();
    this.subscriber.disconnect();
  }
}
