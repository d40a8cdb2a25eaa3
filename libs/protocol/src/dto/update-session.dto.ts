import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { Equals, IsBoolean, IsIn, IsObject, IsString, Length, ValidateIf, ValidateNested } from 'class-validator';
import { APPROVAL_PIN_RULE, COMPACTION_MODES, type CompactionMode, MODEL_OVERRIDE_RULE, SessionTtlDto } from '#libs/agents';
import { SessionBudgetParamDto } from './budget.dto.js';
import { SESSION_TTL_DESCRIPTION, SessionAgentOverrideDto } from './create-session.dto.js';
import { METADATA_SCHEMA } from './session.dto.js';
import { IsSessionMetadata, OptionalNotNull } from './validators.js';

export class UpdateSessionYuxiDto {
  @ApiPropertyOptional({ maxLength: 200 }) @OptionalNotNull() @IsString() @Length(1, 200) title?: string;
  @ApiPropertyOptional() @OptionalNotNull() @IsBoolean() is_pinned?: boolean;
  @ApiPropertyOptional({ description: 'Mark read (false) or unread (true); does not change the work status.' })
  @OptionalNotNull()
  @IsBoolean()
  unread?: boolean;
  @ApiPropertyOptional({ enum: ['default', 'always_ask', 'always_trust'], description: `Default for inputs received after this update. ${APPROVAL_PIN_RULE}` })
  @OptionalNotNull()
  @IsIn(['default', 'always_ask', 'always_trust'])
  tool_approval_mode?: 'default' | 'always_ask' | 'always_trust';
  @ApiPropertyOptional({
    enum: COMPACTION_MODES,
    description: 'Overrides the agent\'s `context.compaction.mode` for inputs received after this update (auto | manual | off).',
  })
  @OptionalNotNull()
  @IsIn(COMPACTION_MODES)
  compaction_mode?: CompactionMode;
  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `Replaces the whole map ({} clears it). ${METADATA_SCHEMA.description}` })
  @OptionalNotNull()
  @IsSessionMetadata()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ type: SessionBudgetParamDto, nullable: true, description: 'Sets or replaces the session\'s own budget (a lifetime budget on the session and its tree); null removes it.' })
  // null has a meaning here: no budget.
  @ValidateIf((_object: object, value: unknown) => value !== undefined && value !== null)
  @IsObject()
  @ValidateNested()
  @Type(() => SessionBudgetParamDto)
  budget?: SessionBudgetParamDto | null;

  @ApiPropertyOptional({ type: SessionTtlDto, nullable: true, description: `Replaces the session's own TTL (null or \`{}\` removes it: its project's and agent's apply); the TTL is resolved again. ${SESSION_TTL_DESCRIPTION}` })
  // null has a meaning here: no TTL of its own.
  @ValidateIf((_object: object, value: unknown) => value !== undefined && value !== null)
  @IsObject()
  @ValidateNested()
  @Type(() => SessionTtlDto)
  ttl?: SessionTtlDto | null;
}

/** Every field may be omitted; an explicit null is 422 (null has no reset meaning). */
export class UpdateSessionDto {
  @ApiPropertyOptional({ type: SessionAgentOverrideDto, description: `\`agent.model\` applies to inputs received after this update. ${MODEL_OVERRIDE_RULE}` })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => SessionAgentOverrideDto)
  agent?: SessionAgentOverrideDto;

  @ApiPropertyOptional({ type: UpdateSessionYuxiDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => UpdateSessionYuxiDto)
  yuxi?: UpdateSessionYuxiDto;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `Replaces the whole map ({} clears it): the same map as \`yuxi.metadata\` (the upstream Agents API's place for it); sending both with different values is 422. ${METADATA_SCHEMA.description}` })
  @OptionalNotNull()
  @IsSessionMetadata()
  metadata?: Record<string, string>;
}

export class CancelInputEventDto {
  @ApiProperty({ enum: ['yuxi.session.input.cancel_input'] })
  @Equals('yuxi.session.input.cancel_input')
  type!: 'yuxi.session.input.cancel_input';

  @ApiProperty({ minLength: 1, maxLength: 64, description: 'A pending input of this session.' })
  @IsString()
  @Length(1, 64)
  input_id!: string;
}

export class CancelTurnYuxiDto {
  @ApiPropertyOptional({ description: 'The turn to cancel; omitted: the current turn at receipt.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  turn_id?: string;

  @ApiPropertyOptional({ description: 'Cancel only if this is still the turn’s current run (else 409).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  expected_run_id?: string;
}

export class CancelTurnEventDto {
  @ApiProperty({ enum: ['agent.session.input.cancel'] })
  @Equals('agent.session.input.cancel')
  type!: 'agent.session.input.cancel';

  @ApiPropertyOptional({ type: CancelTurnYuxiDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => CancelTurnYuxiDto)
  yuxi?: CancelTurnYuxiDto;
}

export class ContinueQueueEventDto {
  @ApiProperty({ enum: ['yuxi.session.input.continue'] })
  @Equals('yuxi.session.input.continue')
  type!: 'yuxi.session.input.continue';
}

/** Stops a whole cooperation tree (sent to any session of it). */
export class TreeStopEventDto {
  @ApiProperty({ enum: ['yuxi.session.tree.stop'] })
  @Equals('yuxi.session.tree.stop')
  type!: 'yuxi.session.tree.stop';
}

/** Continues a stopped tree once its work has settled. */
export class TreeContinueEventDto {
  @ApiProperty({ enum: ['yuxi.session.tree.continue'] })
  @Equals('yuxi.session.tree.continue')
  type!: 'yuxi.session.tree.continue';
}

export class PromoteInputEventDto {
  @ApiProperty({ enum: ['yuxi.session.input.promote'] })
  @Equals('yuxi.session.input.promote')
  type!: 'yuxi.session.input.promote';

  @ApiProperty({ description: 'A pending follow-up of this session to run as a steer.' })
  @IsString()
  @Length(1, 64)
  input_id!: string;
}
