import { Module } from '@nestjs/common';
import { EventOutbox } from './event-outbox.js';
import { EventPublisher } from './event-publisher.js';
import { EventStreamHub } from './event-stream-hub.js';
import { OutboxSubscribers } from './outbox-subscribers.js';
import { eventsRedisBlockingProvider, eventsRedisProvider, streamKeysProvider } from './redis.providers.js';

/** The outbox and publishing: what every writer of session events needs. */
@Module({
  providers: [eventsRedisProvider, streamKeysProvider, EventPublisher, EventOutbox, OutboxSubscribers],
  exports: [EventPublisher, EventOutbox, OutboxSubscribers, eventsRedisProvider, streamKeysProvider],
})
export class EventsModule {}

/** Publishing and SSE subscriptions: what the api needs. */
@Module({
  imports: [EventsModule],
  providers: [eventsRedisBlockingProvider, EventStreamHub],
  exports: [EventsModule, EventStreamHub],
})
export class EventStreamModule {}
