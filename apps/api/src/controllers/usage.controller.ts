import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { AdminUsageReportQueryDto, UsageReportDto, UsageReportQueryDto, UsageReports } from '#libs/protocol';
import { USAGE_REPORT_BY_AGENT_EXAMPLE, USAGE_REPORT_EXAMPLE } from '../openapi/usage-examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const RANGE_RULES =
  '`from` inclusive, `to` exclusive (a date `to` takes in its whole day), UTC; by default the last 30 days. At most 366 days and `limit` groups (default 400, at most 1000; `has_more` says when more had usage). Unknown `group_by`, malformed dates, `from` not before `to` or a longer range: 422 `validation_failed` naming the field.';

const EXAMPLES = { by_day: { summary: 'group_by=day', value: USAGE_REPORT_EXAMPLE }, by_agent: { summary: 'group_by=agent', value: USAGE_REPORT_BY_AGENT_EXAMPLE } };

/** The caller's usage report. Registered before AgentsController (`/agents/usage` is no agent). */
@ApiTags(TAGS.usage.name)
@ApiBearerAuth()
@Controller('api/v1/agents/usage')
export class UsageController {
  constructor(private readonly reports: UsageReports) {}

  @Get()
  @ApiOperation({
    operationId: 'getUsage',
    summary: 'Report the caller\'s usage',
    description: `Tokens, model calls, tool calls and cost of the caller's sessions in a range, summed per \`group_by\` key. A product user reads their account: their own sessions and those of their apps' end users. An app-bound key reads its app's end users, or only the one it names with \`X-End-User-Id\`. Cost is in integer micro-dollars at the price in force at each call (null for a group none of whose model calls had a price). ${RANGE_RULES}`,
  })
  @ApiOkResponse({ type: UsageReportDto, description: 'The groups.', examples: EXAMPLES })
  @ApiErrors('validation_failed')
  get(@CurrentPrincipal() principal: Principal, @Query() query: UsageReportQueryDto): Promise<UsageReportDto> {
    return this.reports.own(principal, query);
  }
}

/** Every owner's usage, for operators and administrators. */
@ApiTags(TAGS.usage.name)
@ApiBearerAuth()
@Controller('api/v1/admin/usage')
export class AdminUsageController {
  constructor(private readonly reports: UsageReports) {}

  @Get()
  @ApiOperation({
    operationId: 'getAdminUsage',
    summary: 'Report every owner\'s usage',
    description: `The usage report across owners, narrowed by \`account_id\` (a product user with their apps' end users), \`agent_id\`, \`project_id\` and \`app_id\` when given. Operators and administrators (403 \`forbidden\` for anyone else). ${RANGE_RULES}`,
  })
  @ApiOkResponse({ type: UsageReportDto, description: 'The groups.', examples: EXAMPLES })
  @ApiErrors('forbidden', 'validation_failed')
  get(@CurrentPrincipal() principal: Principal, @Query() query: AdminUsageReportQueryDto): Promise<UsageReportDto> {
    return this.reports.acrossOwners(principal, query);
  }
}
