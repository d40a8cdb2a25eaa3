import { Body, Controller, Put, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { LifecycleClockDto, SetLifecycleClock, SetLifecycleClockDto } from '#libs/protocol';
import { TAGS } from '../openapi/tags.js';
import { AdjustableClockGuard } from './adjustable-clock.guard.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/lifecycle-clock')
export class AdminLifecycleClockController {
  constructor(private readonly setClock: SetLifecycleClock) {}

  @Put()
  @UseGuards(AdjustableClockGuard('/api/v1/admin/lifecycle-clock', (config) => config.lifecycleClockAdjustable))
  @ApiOperation({
    operationId: 'setLifecycleClock',
    summary: 'Move the lifecycle clock',
    description:
      'Sets how far the clock that session TTLs and retention (SESSION_PURGE_AFTER_S, MODEL_REQUEST_RETENTION_S, COOPERATION_SIGNAL_RETENTION_S, AUDIT_RETENTION_S, and the event outbox\'s replay window EVENTS_REPLAY_TTL_SECONDS) go by runs from the database\'s (`offset_s`, at most two years either way), for tests. Leases, idempotency receipts and every other time keep the real clock. Administrators only (403); a deployment without `LIFECYCLE_CLOCK_ADJUSTABLE=true` has no such route (404 `route_not_found`).',
  })
  @ApiBody({ type: SetLifecycleClockDto, examples: { an_hour_ahead: { value: { offset_s: 3600 } }, reset: { value: { offset_s: 0 } } } })
  @ApiOkResponse({ type: LifecycleClockDto, description: 'The offset now in force and the lifecycle clock\'s reading.', example: { object: 'lifecycle_clock', offset_s: 3600, now: 1733486400 } })
  @ApiErrors('forbidden', 'route_not_found', 'validation_failed', 'invalid_json')
  set(@CurrentPrincipal() principal: Principal, @Body() body: SetLifecycleClockDto): Promise<LifecycleClockDto> {
    return this.setClock.execute(principal, body);
  }
}
