import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { metrics, type QueueCount } from '#libs/metrics';
import { AllQueues } from '#libs/queue';

/** Job states whose counts `yuxi_queue_jobs` shows (a paused queue's jobs stay `waiting`). */
export const QUEUE_STATES = ['waiting', 'active', 'delayed'] as const;

/** Reads the depth of the worker's queues from Redis when metrics are scraped. */
@Injectable()
export class QueueMetrics {
  constructor(queues: AllQueues) {
    metrics.setQueueDepthSource(async () => (await Promise.all(queues.list.map((queue) => countsOf(queue)))).flat());
  }
}

async function countsOf(queue: Queue): Promise<QueueCount[]> {
  const counts = await queue.getJobCounts(...QUEUE_STATES);
  return QUEUE_STATES.map((state) => ({ queue: queue.name, state, count: counts[state] ?? 0 }));
}
