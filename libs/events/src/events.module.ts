import { Module } from '@nestjs/common';
import { EventPublisher } from './event-publisher.js';
import { EventStreamHub } from './event-stream-hub.js';
import { eventsRedisBlockingProvider, eventsRedisProvider } from './redis.providers.js';

/** Publishing only: what the worker needs. */
@Module({
  providers: [eventsRedisProvider, EventPublisher],
  exports: [EventPublisher, eventsRedisProvider],
})
export class EventsModule {}

/** Publishing and SSE subscriptions: what the api needs. */
@Module({
  imports: [EventsModule],
  providers: [eventsRedisBlockingProvider, EventStreamHub],
  exports: [EventsModule, EventStreamHub],
})
export class EventStreamModule {}
