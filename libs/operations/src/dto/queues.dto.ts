import { ApiProperty } from '@nestjs/swagger';

export class QueueCountsDto {
  @ApiProperty({ description: 'The BullMQ queue: `session-dispatch` (nudges to run a session), `maintenance` (sweeps), `files` (attachment preparation), `webhooks` (webhook delivery attempts), `automations` (automation timers: one delayed job per next scheduled time).' }) name!: string;
  @ApiProperty({ description: 'Whether the queue is paused (its jobs stay waiting).' }) paused!: boolean;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Jobs waiting for a worker (prioritized ones included).' }) waiting!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) active!: number;
  @ApiProperty({ type: 'integer', minimum: 0 }) delayed!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Failed jobs kept for inspection (the newest 1000 of a queue at most).' }) failed!: number;
}

export class WorkerStatusDto {
  @ApiProperty() id!: string;
  @ApiProperty() host!: string;
  @ApiProperty({ type: 'integer' }) pid!: number;
  @ApiProperty({ description: 'Whether its queue consumers were running at its last heartbeat.' }) consuming!: boolean;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) started_at!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds of its last heartbeat (every WORKER_HEARTBEAT_MS; a worker missing three is forgotten).' }) last_heartbeat_at!: number;
}

export class RunCountsDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Runs executing under a live worker lease.' }) held!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Runs executing that no worker holds: waiting to be taken over after a crash, a lost lease or a release.' })
  awaiting_takeover!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Runs interrupted in the last hour, each continued by a successor run (a takeover).' }) takeovers_last_hour!: number;
}

export class QueueStatusDto {
  @ApiProperty({ enum: ['admin.queue_status'] }) object!: 'admin.queue_status';
  @ApiProperty({ type: [QueueCountsDto] }) queues!: QueueCountsDto[];
  @ApiProperty({ type: 'integer', nullable: true, description: 'Seconds since the oldest input still pending, across all sessions, was received; null when none is pending.' })
  oldest_pending_input_age_s!: number | null;
  @ApiProperty({ type: [WorkerStatusDto], description: 'Workers whose heartbeat has not expired.' }) workers!: WorkerStatusDto[];
  @ApiProperty({ type: RunCountsDto }) runs!: RunCountsDto;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when these numbers were read.' }) read_at!: number;
}
