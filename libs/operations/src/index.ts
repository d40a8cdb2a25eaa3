export { OperationsModule } from './operations.module.js';
export { GetSessionTimeline } from './use-cases/session-timeline.use-case.js';
export { ListOpenWaitpoints } from './use-cases/open-waitpoints.use-case.js';
export { GetQueueStatus } from './use-cases/queue-status.use-case.js';
export { BulkCancelSessions } from './use-cases/bulk-cancel.use-case.js';
export { ListModelRequests, toModelRequestDto } from './use-cases/model-requests.use-case.js';
export { MODEL_REQUESTS_PAGE, ModelRequestDto, ModelRequestListDto, ModelRequestsQueryDto } from './dto/model-requests.dto.js';
export {
  APPROVAL_DECISIONS,
  SessionTimelineDto,
  TimelineCompactionDto,
  TimelineLeaseDto,
  TimelineMemberDto,
  TimelineModelCallDto,
  TimelineRunDto,
  TimelineSessionDto,
  TimelineStepDto,
  TimelineToolCallDto,
  TimelineTurnDto,
  TimelineWaitpointResponseDto,
  TimelineWaitpointStepDto,
} from './dto/timeline.dto.js';
export { INBOX_KINDS, INBOX_STATUSES, OpenWaitpointDto, OpenWaitpointListDto, WaitpointInboxQueryDto } from './dto/waitpoint-inbox.dto.js';
export { QueueCountsDto, QueueStatusDto, RunCountsDto, WorkerStatusDto } from './dto/queues.dto.js';
export { BULK_CANCEL_MAX, BULK_CANCEL_SAMPLE, BULK_CANCEL_STATUSES, BulkCancelFilterDto, BulkCancelResultDto, BulkCancelSessionsDto, BulkCancelSkippedDto } from './dto/bulk-cancel.dto.js';
export { toTimelineTurns } from './timeline-projection.js';
