import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import {
  AutomationDeletedDto,
  AutomationDto,
  AutomationListDto,
  AutomationListQueryDto,
  AutomationSessionQueryDto,
  CreateAutomation,
  CreateAutomationDto,
  DeleteAutomation,
  GetAutomation,
  GetInvocation,
  InvocationDto,
  InvocationListDto,
  ListAutomations,
  ListInvocations,
  PauseAutomation,
  PreviewSchedule,
  ResumeAutomation,
  RunAutomationNow,
  SchedulePreviewDto,
  SchedulePreviewQueryDto,
  UpdateAutomation,
  UpdateAutomationDto,
} from '#libs/automations';
import {
  AUTOMATION_DELETED_EXAMPLE,
  AUTOMATION_EXAMPLE,
  AUTOMATION_LIST_EXAMPLE,
  CREATE_AUTOMATION_EXAMPLE,
  CREATE_ONCE_EXAMPLE,
  INVOCATION_EXAMPLE,
  INVOCATION_LIST_EXAMPLE,
  MANUAL_INVOCATION_EXAMPLE,
  PAUSED_AUTOMATION_EXAMPLE,
  SCHEDULE_PREVIEW_EXAMPLE,
} from '../openapi/automation-examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';
import { ApiIdempotencyKey } from './api-params.js';
import { sendIdempotent } from './send-idempotent.js';

const UUID = { type: 'string', format: 'uuid' } as const;
const ApiAutomationId = () => ApiParam({ name: 'automation_id', description: 'An automation of the caller (another caller\'s answers 404).', schema: UUID });
const ApiInvocationId = () => ApiParam({ name: 'invocation_id', description: 'An invocation of the automation.', schema: UUID });

function page(query: AutomationListQueryDto) {
  return { after: query.after, limit: query.limit ?? 20, order: query.order ?? 'desc' } as const;
}

/** Automations: agents started by a clock. Registered before AgentsController (`/agents/automations` is no agent). */
@ApiTags(TAGS.automations.name)
@ApiBearerAuth()
@Controller('api/v1/agents/automations')
export class AutomationsController {
  constructor(
    private readonly createAutomation: CreateAutomation,
    private readonly listAutomations: ListAutomations,
    private readonly getAutomation: GetAutomation,
    private readonly updateAutomation: UpdateAutomation,
    private readonly deleteAutomation: DeleteAutomation,
    private readonly pauseAutomation: PauseAutomation,
    private readonly resumeAutomation: ResumeAutomation,
    private readonly runNow: RunAutomationNow,
  ) {}

  @Post()
  @ApiOperation({
    operationId: 'createAutomation',
    summary: 'Create an automation',
    description:
      'An active automation, not fired now: `periodic` with a cron `expression` (5 fields, or 6 with seconds first) read in the IANA `timezone`, or `once` at `run_at` (future Unix seconds). Each time creates a session of `target.agent_id` with `target.input` (`new_session`), or sends `target.instructions` to a root session of the caller (`existing_session`). The agent must be one the caller may use and the session the caller\'s (404); a cooperation member is 409 `state_conflict`. A bad expression or zone, or one firing more often than AUTOMATION_MIN_INTERVAL_S, is 422 naming the field; an inline `agent` or `vault_ids` is 422 `not_implemented`. A `new_session` target\'s `environment.files` must be the caller\'s (404). At most AUTOMATION_MAX_PER_OWNER automations per account, an app\'s end users together (409 `automation_limit`). The automation fires as its creator.',
  })
  @ApiIdempotencyKey('automation-0001')
  @ApiBody({ type: CreateAutomationDto, examples: { periodic: { value: CREATE_AUTOMATION_EXAMPLE }, once: { value: CREATE_ONCE_EXAMPLE } } })
  @ApiCreatedResponse({ type: AutomationDto, description: 'The automation; `yuxi.next_run_at` is its first time.', example: AUTOMATION_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_json', 'idempotency_key_required', 'idempotency_conflict', 'not_found', 'state_conflict', 'automation_limit', 'not_implemented', 'input_text_too_large', 'environment_unavailable')
  async create(@CurrentPrincipal() principal: Principal, @Body() body: CreateAutomationDto, @Headers('idempotency-key') key: string | undefined, @Res() res: Response): Promise<void> {
    sendIdempotent(res, await this.createAutomation.execute(principal, body, key));
  }

  @Get()
  @ApiOperation({ operationId: 'listAutomations', summary: 'List automations', description: 'The caller\'s automations in a stable (created_at, id) order, newest first by default; `session_id` keeps those targeting that existing session.' })
  @ApiOkResponse({ type: AutomationListDto, description: 'One page of automations.', example: AUTOMATION_LIST_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_cursor')
  list(@CurrentPrincipal() principal: Principal, @Query() query: AutomationSessionQueryDto): Promise<AutomationListDto> {
    return this.listAutomations.execute(principal, page(query), query.session_id);
  }

  @Get(':automation_id')
  @ApiOperation({ operationId: 'getAutomation', summary: 'Get an automation' })
  @ApiAutomationId()
  @ApiOkResponse({ type: AutomationDto, description: 'The automation.', example: AUTOMATION_EXAMPLE })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string): Promise<AutomationDto> {
    return this.getAutomation.execute(principal, id);
  }

  @Post(':automation_id')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'updateAutomation',
    summary: 'Update an automation',
    description:
      'Changes the fields given; `target` (same type) and `metadata` are replaced whole. `expression` and `timezone` are for periodic automations, `run_at` for once ones (422 otherwise). A schedule change counts the next time from now while the automation is active; a completed once automation given a future `run_at` is active again at that time.',
  })
  @ApiAutomationId()
  @ApiBody({ type: UpdateAutomationDto, examples: { rename: { value: { name: 'Morning digest' } }, reschedule: { value: { expression: '30 8 * * 1-5', timezone: 'Europe/Berlin' } } } })
  @ApiOkResponse({ type: AutomationDto, description: 'The automation as updated.', example: AUTOMATION_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_json', 'not_found', 'state_conflict', 'not_implemented', 'input_text_too_large', 'environment_unavailable')
  update(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string, @Body() body: UpdateAutomationDto): Promise<AutomationDto> {
    return this.updateAutomation.execute(principal, id, body);
  }

  @Delete(':automation_id')
  @ApiOperation({ operationId: 'deleteAutomation', summary: 'Delete an automation', description: 'No time fires any more; its invocations go with it, the sessions it fed stay.' })
  @ApiAutomationId()
  @ApiOkResponse({ type: AutomationDeletedDto, description: 'Deleted.', example: AUTOMATION_DELETED_EXAMPLE })
  @ApiErrors('not_found')
  delete(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string): Promise<AutomationDeletedDto> {
    return this.deleteAutomation.execute(principal, id);
  }

  @Post(':automation_id/pause')
  @HttpCode(200)
  @ApiOperation({ operationId: 'pauseAutomation', summary: 'Pause an automation', description: 'No scheduled time fires until it is resumed (a running turn goes on); `yuxi.next_run_at` becomes null. A paused one answers as it is; a completed one is 409.' })
  @ApiAutomationId()
  @ApiOkResponse({ type: AutomationDto, description: 'The automation, paused.', example: PAUSED_AUTOMATION_EXAMPLE })
  @ApiErrors('not_found', 'state_conflict')
  pause(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string): Promise<AutomationDto> {
    return this.pauseAutomation.execute(principal, id);
  }

  @Post(':automation_id/resume')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'resumeAutomation',
    summary: 'Resume an automation',
    description: 'Active again from the next scheduled time after now (times passed while paused do not fire). An active one answers as it is; a once automation whose `run_at` has passed, or that completed, is 409 `state_conflict`: set a future `run_at` first (on a completed one, that update alone makes it active again).',
  })
  @ApiAutomationId()
  @ApiOkResponse({ type: AutomationDto, description: 'The automation, active.', example: AUTOMATION_EXAMPLE })
  @ApiErrors('not_found', 'state_conflict')
  resume(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string): Promise<AutomationDto> {
    return this.resumeAutomation.execute(principal, id);
  }

  @Post(':automation_id/invocations')
  @ApiOperation({
    operationId: 'createAutomationInvocation',
    summary: 'Run an automation now',
    description: 'Fires the target once now through the path of scheduled times (its overlap policy applies), without changing the schedule. The same Idempotency-Key replays the same invocation and fires nothing more.',
  })
  @ApiAutomationId()
  @ApiIdempotencyKey('run-now-0001')
  @ApiCreatedResponse({ type: InvocationDto, description: 'The invocation (`source.type` `manual`).', example: MANUAL_INVOCATION_EXAMPLE })
  @ApiErrors('idempotency_key_required', 'idempotency_conflict', 'not_found', 'state_conflict')
  async invoke(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string, @Headers('idempotency-key') key: string | undefined, @Res() res: Response): Promise<void> {
    sendIdempotent(res, await this.runNow.execute(principal, id, key));
  }
}

@ApiTags(TAGS.automations.name)
@ApiBearerAuth()
@Controller('api/v1/agents')
export class AutomationReadsController {
  constructor(
    private readonly listInvocations: ListInvocations,
    private readonly getInvocation: GetInvocation,
    private readonly preview: PreviewSchedule,
  ) {}

  @Get('automations/:automation_id/invocations')
  @ApiOperation({ operationId: 'listAutomationInvocations', summary: 'List an automation\'s invocations', description: 'What each scheduled time and each run did, newest first by default: fired (with its session, input and turn), skipped (and why) or failed (and why).' })
  @ApiAutomationId()
  @ApiOkResponse({ type: InvocationListDto, description: 'One page of invocations.', example: INVOCATION_LIST_EXAMPLE })
  @ApiErrors('validation_failed', 'invalid_cursor', 'not_found')
  list(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string, @Query() query: AutomationListQueryDto): Promise<InvocationListDto> {
    return this.listInvocations.execute(principal, id, page(query));
  }

  @Get('automations/:automation_id/invocations/:invocation_id')
  @ApiOperation({ operationId: 'getAutomationInvocation', summary: 'Get an invocation' })
  @ApiAutomationId()
  @ApiInvocationId()
  @ApiOkResponse({ type: InvocationDto, description: 'The invocation.', example: INVOCATION_EXAMPLE })
  @ApiErrors('not_found')
  get(@CurrentPrincipal() principal: Principal, @Param('automation_id') id: string, @Param('invocation_id') invocationId: string): Promise<InvocationDto> {
    return this.getInvocation.execute(principal, id, invocationId);
  }

  @Get('automation-schedules/preview')
  @ApiOperation({ operationId: 'previewAutomationSchedule', summary: 'Preview a schedule', description: 'The next fire times of a cron expression in a time zone after now, as an automation with them would fire (422 naming the field for a bad one).' })
  @ApiOkResponse({ type: SchedulePreviewDto, description: 'The next fire times.', example: SCHEDULE_PREVIEW_EXAMPLE })
  @ApiErrors('validation_failed')
  schedulePreview(@Query() query: SchedulePreviewQueryDto): Promise<SchedulePreviewDto> {
    return this.preview.execute(query.expression, query.timezone, query.count ?? 5);
  }
}
