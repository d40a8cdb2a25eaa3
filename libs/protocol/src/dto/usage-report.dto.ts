import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsString, IsUUID, Length } from 'class-validator';
import { USAGE_GROUP_KEYS, USAGE_REPORT_DEFAULT_DAYS, USAGE_REPORT_DEFAULT_GROUPS, USAGE_REPORT_MAX_DAYS, USAGE_REPORT_MAX_GROUPS, type UsageGroupKey } from '#libs/usage';
import { OptionalNotNull } from './validators.js';

// group_by, from, to and the limit's range are checked by parseUsageReport (one 422 naming each field), not here:
// the date rules (a date `to` takes in its whole day, the range at most a year) are the report's.
/** `GET /api/v1/agents/usage`: what to sum and how to group it. */
export class UsageReportQueryDto {
  @ApiPropertyOptional({
    enum: USAGE_GROUP_KEYS,
    default: 'day',
    description: 'One group per UTC day (`YYYY-MM-DD`), agent id, model, session id, project id, app id or end user (`X-End-User-Id`, with its `app_id`).',
  })
  @OptionalNotNull()
  @IsString()
  group_by?: UsageGroupKey;

  @ApiPropertyOptional({
    type: String,
    example: '2026-12-01',
    description: `Inclusive start, UTC: an ISO 8601 date (\`2026-12-01\`) or date-time (\`2026-12-01T08:00:00Z\`; without an offset, UTC). Default: the start of the UTC day ${USAGE_REPORT_DEFAULT_DAYS - 1} days before \`to\`'s (${USAGE_REPORT_DEFAULT_DAYS} days).`,
  })
  @OptionalNotNull()
  @IsString()
  @Length(1, 40)
  from?: string;

  @ApiPropertyOptional({
    type: String,
    example: '2026-12-05',
    description: `End, UTC: a date-time is exclusive, a date takes in that whole day. Default: now. \`from\` must be before \`to\`, and the range at most ${USAGE_REPORT_MAX_DAYS} days (else 422 \`validation_failed\`).`,
  })
  @OptionalNotNull()
  @IsString()
  @Length(1, 40)
  to?: string;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: USAGE_REPORT_MAX_GROUPS,
    default: USAGE_REPORT_DEFAULT_GROUPS,
    description: 'The most groups answered (the first ones in the report\'s order); `has_more` says when more groups had usage. A day report of the longest range fits in the default.',
  })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  limit?: number;
}

/** `GET /api/v1/admin/usage`: the same across owners, each filter narrowing. */
export class AdminUsageReportQueryDto extends UsageReportQueryDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'Usage billed to this account: a product user, with the usage of their apps\' end users.' })
  @OptionalNotNull()
  @IsUUID()
  account_id?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 256, description: 'Usage of this agent\'s sessions.' }) @OptionalNotNull() @IsString() @Length(1, 256) agent_id?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 256, description: 'Usage of this project\'s sessions.' }) @OptionalNotNull() @IsString() @Length(1, 256) project_id?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 128, description: 'Usage of this app\'s end users.' }) @OptionalNotNull() @IsString() @Length(1, 128) app_id?: string;
}

export class UsageReportRowDto {
  @ApiProperty({ type: String, nullable: true, description: 'The group: a UTC day `YYYY-MM-DD`, or the id grouped by; null for usage without one (tool calls have no model, sessions outside a project no project).' })
  key!: string | null;
  @ApiPropertyOptional({ type: String, nullable: true, description: 'Grouped by `end_user` only: the end user\'s app.' }) app_id?: string | null;
  @ApiProperty({ type: 'integer', description: 'Input tokens, cached ones included.' }) input_tokens!: number;
  @ApiProperty({ type: 'integer', description: 'Output tokens, reasoning ones included.' }) output_tokens!: number;
  @ApiProperty({ type: 'integer' }) cached_tokens!: number;
  @ApiProperty({ type: 'integer' }) reasoning_tokens!: number;
  @ApiProperty({ type: 'integer', description: 'Model calls: turns\' model steps, compactions and MCP sampling requests.' }) model_calls!: number;
  @ApiProperty({ type: 'integer', description: 'Tool calls and sandbox commands.' }) tool_calls!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Integer micro-dollars at the price in force at each call; null when no model call of the group had a price.' })
  cost_microusd!: number | null;
}

export class UsageReportDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ enum: USAGE_GROUP_KEYS }) group_by!: UsageGroupKey;
  @ApiProperty({ type: String, format: 'date-time', description: 'The range summed: from (inclusive)…' }) from!: string;
  @ApiProperty({ type: String, format: 'date-time', description: '…to (exclusive).' }) to!: string;
  @ApiProperty({ type: [UsageReportRowDto], description: 'Days oldest first; every other key the most spent first (cost, then tokens). Groups without usage in the range are absent.' })
  data!: UsageReportRowDto[];
  @ApiProperty({ description: 'More groups had usage than `limit`.' }) has_more!: boolean;
}
