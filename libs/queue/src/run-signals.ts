import { randomUUID } from 'node:crypto';
import { Inject, Injectable, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { AppConfig, createRedisClient, type RedisClient } from '#libs/config';

const CANCEL_CHANNEL = 'yuxi:run-cancel';
const STEER_CHANNEL = 'yuxi:session-steer';
/**
 * Messages between workers about a call one of them holds open (an MCP call waiting for a user's
 * answer): one channel per address, subscribed only by the worker listening there, so a message
 * reaches (and is parsed by) that worker alone.
 */
const CALL_CHANNEL_PREFIX = 'yuxi:held-call:';
/** Wake-ups of a lingering worker (session-linger.ts): one channel per worker address, the session id as the message. */
export const WAKE_CHANNEL_PREFIX = 'yuxi:linger-wake:';
/**
 * A call message above this size (a tool result with media) is not published: it is stored under a
 * key of its own for CALL_BODY_TTL_MS and the channel carries its name. Pub/sub pushes every message
 * through each subscriber's output buffer, whose hard limit (32 MB by default) would disconnect the
 * subscriber, and with it this worker's cancel and steer signals.
 */
export const CALL_MESSAGE_INLINE_BYTES = 64 * 1024;
const CALL_BODY_PREFIX = 'yuxi:held-call-body:';
/** Long enough for the receiver to read it right after the reference arrives; then Redis forgets it. */
const CALL_BODY_TTL_MS = 60_000;
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
  private wakeHandler: ((sessionId: string) => void) | null = null;
  private subscribing: Promise<unknown> | null = null;
  /** Call messages are handed on in the order they arrived, a stored one once it is read back. */
  private inbox: Promise<void> = Promise.resolve();

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
   * built on it says who answers (test the answer, not the publish). A large message travels as a
   * reference to a key holding it (CALL_MESSAGE_INLINE_BYTES).
   */
  async sendCallMessage(address: string, message: object): Promise<boolean> {
    try {
      const text = JSON.stringify(message);
      let sent = text;
      if (Buffer.byteLength(text) > CALL_MESSAGE_INLINE_BYTES) {
        const ref = `${CALL_BODY_PREFIX}${randomUUID()}`;
        await this.publisher.set(ref, text, 'PX', CALL_BODY_TTL_MS);
        sent = JSON.stringify({ ref });
      }
      await this.publisher.publish(callChannel(address), sent);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Calls `handler` with each message sent to `address`, once this worker subscribes to the
   * address's channel (rejects when it cannot: Redis out of reach); returns the unsubscribe function.
   */
  async onCallMessage(address: string, handler: (message: unknown) => void): Promise<() => void> {
    await this.subscribe();
    this.callHandlers.set(address, handler);
    try {
      await bounded(this.subscriber.subscribe(callChannel(address)));
    } catch (error) {
      this.dropCallHandler(address, handler);
      throw error;
    }
    return () => this.dropCallHandler(address, handler);
  }

  /**
   * Calls `handler` with each session id published to `address`'s wake channel, on the same
   * subscriber connection as every other signal (rejects when Redis is out of reach).
   */
  async onWake(address: string, handler: (sessionId: string) => void): Promise<void> {
    await this.subscribe();
    this.wakeHandler = handler;
    await bounded(this.subscriber.subscribe(`${WAKE_CHANNEL_PREFIX}${address}`));
  }

  /** How many addresses this worker listens at (for tests: every follow and hold ends by closing its own). */
  get callListeners(): number {
    return this.callHandlers.size;
  }

  private dropCallHandler(address: string, handler: (message: unknown) => void): void {
    if (this.callHandlers.get(address) !== handler) return;
    this.callHandlers.delete(address);
    // Commands go out in order on the one connection: a later subscribe of the same address wins.
    this.subscriber.unsubscribe(callChannel(address)).catch(() => undefined);
  }

  private onMessage(channel: string, text: string): void {
    if (channel.startsWith(WAKE_CHANNEL_PREFIX)) return this.wakeHandler?.(text);
    if (!channel.startsWith(CALL_CHANNEL_PREFIX)) return (channel === STEER_CHANNEL ? this.steerHandlers : this.handlers).get(text)?.();
    const address = channel.slice(CALL_CHANNEL_PREFIX.length);
    this.inbox = this.inbox.then(async () => {
      const body = await this.callBody(text);
      if (body !== undefined) this.callHandlers.get(address)?.(body);
    }).catch(() => undefined);
  }

  /** The message as sent (read back from its key where it was stored); undefined when unreadable or expired. */
  private async callBody(text: string): Promise<unknown> {
    try {
      const parsed = JSON.parse(text) as unknown;
      const ref = (parsed as { ref?: unknown } | null)?.ref;
      if (typeof ref !== 'string' || !ref.startsWith(CALL_BODY_PREFIX)) return parsed;
      const stored = await this.publisher.get(ref);
      if (stored === null) return undefined;
      this.publisher.del(ref).catch(() => undefined);
      return JSON.parse(stored) as unknown;
    } catch {
      return undefined;
    }
  }

  private async subscribe(): Promise<void> {
    if (!this.subscribing) {
      this.subscriber.removeAllListeners('message');
      this.subscriber.on('message', (channel: string, text: string) => this.onMessage(channel, text));
      // A failed subscribe is not cached: the next caller tries again. It is bounded in time: while
      // Redis is down, runs go on and the heartbeat's durable reads stand in for the signals.
      this.subscribing = bounded(this.subscriber.subscribe(CANCEL_CHANNEL, STEER_CHANNEL)).catch((error: unknown) => {
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

const callChannel = (address: string): string => `${CALL_CHANNEL_PREFIX}${address}`;

function bounded<T>(subscribing: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('signal subscription timed out')), SUBSCRIBE_TIMEOUT_MS);
    timer.unref();
  });
  return Promise.race([subscribing, timeout]).finally(() => clearTimeout(timer));
}
