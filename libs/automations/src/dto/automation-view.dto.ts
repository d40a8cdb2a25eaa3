import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { AUTOMATION_STATUSES, AUTOMATION_TYPES, CATCH_UP_POLICIES, INVOCATION_REASONS, INVOCATION_STATUSES, OVERLAP_POLICIES, PAUSE_REASONS, SKIP_REASONS } from '../automation.types.js';

const UNIX_S = { type: 'integer', description: 'Unix seconds.' } as const;

export class AutomationTargetDto {
  @ApiProperty({ enum: ['new_session', 'existing_session'] }) type!: 'new_session' | 'existing_session';
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, description: 'new_session: always null (a saved agent is named by `agent_id`).' }) agent?: null;
  @ApiPropertyOptional({ description: 'new_session: the saved agent each session starts.' }) agent_id?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'new_session: the environment param of each session.' }) environment?: Record<string, unknown>;
  @ApiPropertyOptional({ type: 'array', items: { type: 'object', additionalProperties: true }, description: 'new_session: the first input of each session (user messages).' }) input?: unknown[];
  @ApiPropertyOptional({ type: 'object', additionalProperties: { type: 'string' }, description: 'new_session: metadata of each session.' }) metadata?: Record<string, string>;
  @ApiPropertyOptional({ type: 'array', items: { type: 'string' }, description: 'new_session: always empty.' }) vault_ids?: string[];
  @ApiPropertyOptional({ format: 'uuid', description: 'existing_session: the session receiving each invocation.' }) session_id?: string;
  @ApiPropertyOptional({ description: 'existing_session: the text sent to it each time.' }) instructions?: string;
}

export class AutomationCreatedByDto {
  @ApiProperty({ enum: ['developer'] }) type!: 'developer';
}

export class AutomationYuxiDto {
  @ApiProperty({ enum: OVERLAP_POLICIES }) overlap!: string;
  @ApiProperty({ enum: CATCH_UP_POLICIES }) catch_up!: string;
  @ApiProperty({ ...UNIX_S, nullable: true, description: 'The next scheduled time (Unix seconds) while active; null when paused or completed.' }) next_run_at!: number | null;
}

export class AutomationDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['agent.automation'] }) object!: 'agent.automation';
  @ApiProperty() name!: string;
  @ApiProperty({ enum: AUTOMATION_TYPES }) type!: string;
  @ApiPropertyOptional({ description: 'periodic: the cron expression.' }) expression?: string;
  @ApiPropertyOptional({ description: 'periodic: the IANA time zone.' }) timezone?: string;
  @ApiPropertyOptional({ ...UNIX_S, description: 'once: the time to fire (Unix seconds).' }) run_at?: number;
  @ApiProperty({ enum: AUTOMATION_STATUSES, description: '`completed`: a once automation that fired (its schedule is done, not necessarily the agent\'s work).' }) status!: string;
  @ApiProperty({ type: String, enum: [...PAUSE_REASONS, null], nullable: true, description: 'Why the service paused it (its target or agent gone, the owner unavailable); null otherwise.' }) pause_reason!: string | null;
  @ApiProperty({ type: AutomationTargetDto }) target!: AutomationTargetDto;
  @ApiProperty(UNIX_S) created_at!: number;
  @ApiProperty({ type: AutomationCreatedByDto }) created_by!: AutomationCreatedByDto;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) metadata!: Record<string, string>;
  @ApiProperty({ type: AutomationYuxiDto }) yuxi!: AutomationYuxiDto;
}

export class AutomationListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AutomationDto] }) data!: AutomationDto[];
  @ApiProperty({ type: 'string', nullable: true }) first_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class AutomationDeletedDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['agent.automation.deleted'] }) object!: 'agent.automation.deleted';
  @ApiProperty({ enum: [true] }) deleted!: true;
}

export class InvocationErrorDto {
  @ApiProperty() code!: string;
  @ApiProperty() message!: string;
}

export class InvocationSourceDto {
  @ApiProperty({ enum: ['automation', 'manual'], description: '`automation`: a scheduled time; `manual`: run now.' }) type!: 'automation' | 'manual';
  @ApiPropertyOptional({ type: AutomationDto, description: 'automation: the automation as it was when the time fired, its target without `input` or `instructions` (what the fire sent is the session\'s, through `session_id`).' }) automation?: AutomationDto;
}

export class InvocationYuxiDto {
  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, description: 'The input the invocation was accepted as.' }) input_id!: string | null;
  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, description: 'The turn that input became (once one claimed it).' }) turn_id!: string | null;
  @ApiProperty({ enum: INVOCATION_REASONS, description: 'What the invocation did and why.' }) reason!: string;
  @ApiProperty({ ...UNIX_S, nullable: true, description: 'When its input was accepted (Unix seconds); null when none was.' }) fired_at!: number | null;
}

export class InvocationDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['agent.automation.invocation'] }) object!: 'agent.automation.invocation';
  @ApiProperty({ format: 'uuid' }) automation_id!: string;
  @ApiProperty(UNIX_S) created_at!: number;
  @ApiProperty({ ...UNIX_S, nullable: true, description: 'The scheduled time (Unix seconds); null for run now.' }) scheduled_at!: number | null;
  @ApiProperty({ type: 'string', format: 'uuid', nullable: true, description: 'The session it fed.' }) session_id!: string | null;
  @ApiProperty({ enum: INVOCATION_STATUSES, description: '`completed` once its input was accepted (follow the turn through `yuxi.turn_id`).' }) status!: string;
  @ApiProperty({ type: String, enum: [...SKIP_REASONS, null], nullable: true }) skip_reason!: string | null;
  @ApiProperty({ type: InvocationErrorDto, nullable: true }) error!: InvocationErrorDto | null;
  @ApiProperty({ type: InvocationSourceDto }) source!: InvocationSourceDto;
  @ApiProperty({ type: InvocationYuxiDto }) yuxi!: InvocationYuxiDto;
}

export class InvocationListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [InvocationDto] }) data!: InvocationDto[];
  @ApiProperty({ type: 'string', nullable: true }) first_id!: string | null;
  @ApiProperty({ type: 'string', nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class SchedulePreviewDto {
  @ApiProperty({ enum: ['agent.automation.schedule_preview'] }) object!: 'agent.automation.schedule_preview';
  @ApiProperty() expression!: string;
  @ApiProperty() timezone!: string;
  @ApiProperty({ type: 'array', items: { type: 'integer' }, description: 'The next fire times after now, Unix seconds, ascending.' }) next_run_times!: number[];
}
