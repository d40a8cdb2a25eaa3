import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import type { PublicEvent } from './event.types.js';
import { EVENTS_REDIS } from './redis.providers.js';
import { sessionStreamKey } from './stream-keys.js';

/** Appends events to the session stream atomically, trims it to the replay window and refreshes its TTL. */
const PUBLISH_SCRIPT = `
local ids = {}
for i = 3, #ARGV, 2 do
  ids[#ids + 1] = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 't', ARGV[i], 'e', ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return ids
`;

type PublishingRedis = Redis & { yuxiPublishEvents(key: string, ...args: string[]): Promise<string[]> };

export type OutgoingEvent = { type: string } & Record<string, unknown>;

@Injectable()
export class EventPublisher implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(EVENTS_REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {}

  /** Registered as a command so ioredis sends EVALSHA instead of the script text on every publish. */
  onModuleInit(): void {
    this.redis.defineCommand('yuxiPublishEvents', { numberOfKeys: 1, lua: PUBLISH_SCRIPT });
  }

  /** Publishes in order; returns the events as sent, each with its stable event_id. */
  async publish(sessionId: string, events: OutgoingEvent[]): Promise<PublicEvent[]> {
    if (events.length === 0) return [];
    const createdAt = Math.floor(Date.now() / 1000);
    const stamped = events.map(
      (event) => ({ ...event, event_id: `evt_${newId().replaceAll('-', '')}`, session_id: sessionId, created_at: createdAt }) as PublicEvent,
    );
    const args: string[] = [String(this.config.eventsReplayMaxLen), String(this.config.eventsReplayTtlSeconds)];
    for (const event of stamped) args.push(event.type, JSON.stringify(event));
    await (this.redis as PublishingRedis).yuxiPublishEvents(sessionStreamKey(sessionId), ...args);
    return stamped;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
