import { Inject, Injectable, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '#libs/config';

const CANCEL_CHANNEL = 'yuxi:run-cancel';
export const SIGNALS_PUBLISHER = Symbol('SIGNALS_PUBLISHER');
export const SIGNALS_SUBSCRIBER = Symbol('SIGNALS_SUBSCRIBER');

/** Lazy: an api process only publishes, so its subscriber connection is never opened. */
export const signalsRedisProviders: Provider[] = [
  {
    provide: SIGNALS_PUBLISHER,
    inject: [AppConfig],
    useFactory: (config: AppConfig) => new Redis(config.redisUrl, { lazyConnect: true, connectionName: 'yuxi-signals' }),
  },
  {
    provide: SIGNALS_SUBSCRIBER,
    inject: [AppConfig],
    useFactory: (config: AppConfig) => new Redis(config.redisUrl, { lazyConnect: true, connectionName: 'yuxi-signals-sub' }),
  },
];

/**
 * Prompt cancellation of running runs across processes: the api publishes the run id, the worker
 * that holds the run aborts its model call. Pub/sub is best effort; the run's heartbeat also reads
 * the durable cancellation flag, so a lost signal only delays the abort to the next heartbeat.
 */
@Injectable()
export class RunSignals implements OnApplicationShutdown {
  private readonly handlers = new Map<string, () => void>();
  private subscribing: Promise<unknown> | null = null;

  constructor(
    @Inject(SIGNALS_PUBLISHER) private readonly publisher: Redis,
    @Inject(SIGNALS_SUBSCRIBER) private readonly subscriber: Redis,
  ) {}

  async requestCancel(runId: string): Promise<void> {
    await this.publisher.publish(CANCEL_CHANNEL, runId);
  }

  /** Calls `handler` when a cancel for `runId` arrives; returns the unsubscribe function. */
  async onCancel(runId: string, handler: () => void): Promise<() => void> {
    if (!this.subscribing) {
      this.subscriber.on('message', (_channel: string, id: string) => this.handlers.get(id)?.());
      this.subscribing = this.subscriber.subscribe(CANCEL_CHANNEL);
    }
    await this.subscribing;
    this.handlers.set(runId, handler);
    return () => this.handlers.delete(runId);
  }

  async onApplicationShutdown(): Promise<void> {
    this.publisher.disconnect();
    this.subscriber.disconnect();
  }
}
