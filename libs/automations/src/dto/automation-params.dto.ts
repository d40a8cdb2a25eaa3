import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsIn, IsInt, IsObject, IsOptional, IsString, Length, Max, Min, MinLength, ValidateNested } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';
import { INPUT_MESSAGE_SCHEMA, ListQueryDto } from '#libs/protocol';
import { AUTOMATION_TYPES, type AutomationType, CATCH_UP_POLICIES, type CatchUpPolicy, OVERLAP_POLICIES, type OverlapPolicy } from '../automation.types.js';

/** The largest Unix time a `run_at` may name (year 9999): beyond it a timestamp cannot hold it. */
export const MAX_RUN_AT_S = 253_402_300_799;

export const TARGET_TYPES = ['new_session', 'existing_session'] as const;

const METADATA_SCHEMA = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 512 },
  maxProperties: 16,
  example: { team: 'research' },
} as const;


/** `target`: a new session of a saved agent per invocation, or a message to an existing session. */
export class AutomationTargetParamDto {
  @ApiProperty({ enum: TARGET_TYPES, description: '`new_session`: each invocation creates a session of `agent_id` with `input`; `existing_session`: each sends `instructions` to `session_id` as a user message.' })
  @IsIn(TARGET_TYPES)
  type!: (typeof TARGET_TYPES)[number];

  @ApiPropertyOptional({ minLength: 1, maxLength: 64, example: 'default-chatbot', description: 'new_session: a saved agent the caller may use (404 otherwise).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  agent_id?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'new_session: an inline agent is not available in this deployment (422 `not_implemented`): name a saved agent with `agent_id`.' })
  @IsOptional()
  @IsObject()
  agent?: Record<string, unknown>;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { type: 'none' },
    description: 'new_session: the environment param of a session create (default `{"type": "none"}`), checked at create as a session create checks it.',
  })
  @OptionalNotNull()
  @IsObject({ message: 'environment must be an object with a `type`' })
  environment?: Record<string, unknown>;

  @ApiPropertyOptional({ type: 'array', items: INPUT_MESSAGE_SCHEMA, description: 'new_session: 1–20 user messages, the first input of each new session (the bounds of a session\'s input, MAX_INPUT_TEXT_BYTES included).' })
  @OptionalNotNull()
  @IsArray()
  input?: unknown[];

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: 'new_session: metadata of each new session (at most 16 keys of 1–64 characters, values of at most 512).' })
  @IsOptional()
  @IsObject()
  metadata?: Record<string, string> | null;

  @ApiPropertyOptional({ type: 'array', items: { type: 'string' }, description: 'new_session: vaults are not available in this deployment: a non-empty list is 422 `not_implemented`.' })
  @IsOptional()
  @IsArray()
  vault_ids?: string[] | null;

  @ApiPropertyOptional({ format: 'uuid', description: 'existing_session: a root session of the caller (another caller\'s is 404, a member of a cooperation tree 409).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  session_id?: string;

  @ApiPropertyOptional({ minLength: 1, description: 'existing_session: the text each invocation sends to the session as a user message (at most MAX_INPUT_TEXT_BYTES).' })
  @OptionalNotNull()
  @IsString()
  @MinLength(1)
  instructions?: string;
}

export class AutomationYuxiParamDto {
  @ApiPropertyOptional({
    enum: OVERLAP_POLICIES,
    description: 'While the previous invocation\'s turn is still active: `skip` records the time as skipped (default), `queue` accepts the input behind it, `cancel_previous` cancels that turn first.',
  })
  @OptionalNotNull()
  @IsIn(OVERLAP_POLICIES)
  overlap?: OverlapPolicy;

  @ApiPropertyOptional({
    enum: CATCH_UP_POLICIES,
    description: 'Times missed while nothing could fire them (every worker down, timers lost): `none` fires none, `latest` the most recent one (default), `all` each of them (at most AUTOMATION_CATCH_UP_MAX); the others are recorded as skipped (`missed`).',
  })
  @OptionalNotNull()
  @IsIn(CATCH_UP_POLICIES)
  catch_up?: CatchUpPolicy;
}

/** The fields create and update share. */
class AutomationFieldsDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 256, example: '0 9 * * 1-5', description: 'periodic: a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 256)
  expression?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 64, example: 'Europe/Berlin', description: 'periodic: the IANA time zone the expression is read in.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  timezone?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MAX_RUN_AT_S, description: 'once: the time to fire, Unix seconds in the future.' })
  @OptionalNotNull()
  @IsInt()
  @Min(0)
  @Max(MAX_RUN_AT_S)
  run_at?: number;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: 'Your string labels (at most 16 keys of 1–64 characters, values of at most 512).' })
  @OptionalNotNull()
  @IsObject()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ type: AutomationYuxiParamDto })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => AutomationYuxiParamDto)
  yuxi?: AutomationYuxiParamDto;
}

export class CreateAutomationDto extends AutomationFieldsDto {
  @ApiProperty({ minLength: 1, maxLength: 256, example: 'Weekday digest' })
  @IsString()
  @Length(1, 256)
  name!: string;

  @ApiProperty({ enum: AUTOMATION_TYPES, description: '`periodic` (with `expression` and `timezone`) or `once` (with `run_at`).' })
  @IsIn(AUTOMATION_TYPES)
  type!: AutomationType;

  @ApiProperty({ type: AutomationTargetParamDto })
  @IsObject()
  @ValidateNested()
  @Type(() => AutomationTargetParamDto)
  target!: AutomationTargetParamDto;
}

export class UpdateAutomationDto extends AutomationFieldsDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 256, example: 'Weekday digest' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 256)
  name?: string;

  @ApiPropertyOptional({ type: AutomationTargetParamDto, description: 'Replaces the whole target; its type stays.' })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => AutomationTargetParamDto)
  target?: AutomationTargetParamDto;
}

/** Pages of automations and of their invocations: the lists' common query (default 20 a page). */
export class AutomationListQueryDto extends ListQueryDto {}

export class AutomationSessionQueryDto extends AutomationListQueryDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'Only the automations whose target is this existing session.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  session_id?: string;
}

export class SchedulePreviewQueryDto {
  @ApiProperty({ minLength: 1, maxLength: 256, example: '0 9 * * 1-5', description: 'A cron expression of 5 or 6 fields.' })
  @IsString()
  @Length(1, 256)
  expression!: string;

  @ApiProperty({ minLength: 1, maxLength: 64, example: 'Europe/Berlin', description: 'An IANA time zone.' })
  @IsString()
  @Length(1, 64)
  timezone!: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 20, default: 5, description: 'How many fire times (default 5).' })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(20)
  count?: number;
}
