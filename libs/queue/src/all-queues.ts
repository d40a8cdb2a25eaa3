import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QUEUES } from './queue-names.js';

/**
 * A handle on every queue of QUEUES, in one place: the queue depth metric and the operators'
 * queue status list them all, and a queue added to QUEUES is added here once.
 */
@Injectable()
export class AllQueues {
  readonly list: readonly Queue[];

  constructor(
    @InjectQueue(QUEUES.sessions) sessions: Queue,
    @InjectQueue(QUEUES.maintenance) maintenance: Queue,
    @InjectQueue(QUEUES.files) files: Queue,
    @InjectQueue(QUEUES.webhooks) webhooks: Queue,
    @InjectQueue(QUEUES.automations) automations: Queue,
  ) {
    this.list = [sessions, maintenance, files, webhooks, automations];
  }
}
