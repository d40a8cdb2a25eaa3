import { Injectable } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { unixSeconds } from '#libs/database';
import { InputsRepository, RunsRepository } from '#libs/engine';
import { AllQueues, WorkerPresence } from '#libs/queue';
import type { QueueCountsDto, QueueStatusDto } from '../dto/queues.dto.js';

/**
 * The queues page: per queue its job counts (Redis), the oldest pending input, live workers, runs
 * held and taken over (Postgres). Every read is a count over an index or a Redis counter; nothing
 * scans jobs or history.
 */
@Injectable()
export class GetQueueStatus {
  constructor(
    private readonly queues: AllQueues,
    private readonly inputs: InputsRepository,
    private readonly runs: RunsRepository,
    private readonly presence: WorkerPresence,
  ) {}

  async execute(): Promise<QueueStatusDto> {
    const [queues, oldest, workers, runs] = await Promise.all([
      Promise.all(this.queues.list.map((queue) => countsOf(queue))),
      this.inputs.oldestPendingAgeSeconds(),
      this.presence.live(),
      this.runs.fleetCounts(),
    ]);
    const now = new Date();
    return {
      object: 'admin.queue_status',
      queues,
      oldest_pending_input_age_s: oldest === null ? null : Math.max(0, oldest),
      workers: workers.map((worker) => ({
        id: worker.id,
        host: worker.host,
        pid: worker.pid,
        consuming: worker.consuming,
        started_at: unixSeconds(new Date(worker.started_at)),
        last_heartbeat_at: unixSeconds(new Date(worker.at)),
      })),
      runs: { held: runs.held, awaiting_takeover: runs.awaitingTakeover, takeovers_last_hour: runs.takeoversLastHour },
      read_at: unixSeconds(now),
    };
  }
}

async function countsOf(queue: Queue): Promise<QueueCountsDto> {
  const [counts, paused] = await Promise.all([queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'failed'), queue.isPaused()]);
  return {
    name: queue.name,
    paused,
    waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
    active: counts.active ?? 0,
    delayed: counts.delayed ?? 0,
    failed: counts.failed ?? 0,
  };
}
