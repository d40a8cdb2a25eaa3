import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { assertViewer, CurrentPrincipal, type Principal } from '#libs/auth';
import { GetQueueStatus, QueueStatusDto } from '#libs/operations';
import { QUEUE_STATUS_EXAMPLE } from '../openapi/operator-examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/queues')
export class AdminQueuesController {
  constructor(private readonly status: GetQueueStatus) {}

  @Get()
  @ApiOperation({
    operationId: 'getQueueStatus',
    summary: 'Read queue and worker status',
    description:
      'Per BullMQ queue its job counts (waiting, active, delayed, failed); how long the oldest pending input has waited across all sessions; the live workers (by heartbeat); the runs held by workers, waiting to be taken over, and taken over in the last hour. Cheap counts, safe to poll. 503 `service_unavailable` while Redis or Postgres is unreachable. Viewers, operators and administrators.',
  })
  @ApiOkResponse({ type: QueueStatusDto, description: 'The numbers as of `read_at`.', example: QUEUE_STATUS_EXAMPLE })
  @ApiErrors('forbidden', 'service_unavailable', 'rate_limited')
  get(@CurrentPrincipal() principal: Principal): Promise<QueueStatusDto> {
    assertViewer(principal);
    return this.status.execute();
  }
}
