import { Body, Controller, Put, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { SetUsageClock, SetUsageClockDto, UsageClockDto } from '#libs/protocol';
import { TAGS } from '../openapi/tags.js';
import { AdjustableClockGuard } from './adjustable-clock.guard.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/usage-clock')
export class AdminUsageClockController {
  constructor(private readonly setClock: SetUsageClock) {}

  @Put()
  @UseGuards(AdjustableClockGuard('/api/v1/admin/usage-clock', (config) => config.usageClockAdjustable))
  @ApiOperation({
    operationId: 'setUsageClock',
    summary: 'Move the usage clock',
    description:
      'Sets how far the clock of budget periods and usage report days runs from the database\'s (`offset_s`, at most two years either way), for tests of day and month roll-overs. Leases and every other time keep the real clock. Administrators only (403); a deployment without `USAGE_CLOCK_ADJUSTABLE=true` has no such route (404 `route_not_found`).',
  })
  @ApiBody({ type: SetUsageClockDto, examples: { next_day: { value: { offset_s: 86400 } }, reset: { value: { offset_s: 0 } } } })
  @ApiOkResponse({ type: UsageClockDto, description: 'The offset now in force and the usage clock\'s reading.', example: { object: 'usage_clock', offset_s: 86400, now: 1733486400 } })
  @ApiErrors('forbidden', 'route_not_found', 'validation_failed', 'invalid_json')
  set(@CurrentPrincipal() principal: Principal, @Body() body: SetUsageClockDto): Promise<UsageClockDto> {
    return this.setClock.execute(principal, body);
  }
}
