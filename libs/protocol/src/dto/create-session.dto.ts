import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsString, Length, ValidateNested } from 'class-validator';
import { AGENT_INPUT_SCHEMA } from './input.schema.js';
import { IsAgentInput, OptionalNotNull } from './validators.js';

export class SessionAgentOverrideDto {
  @ApiPropertyOptional({ description: 'Model override, `provider:model`.', example: 'scripted:echo' })
  @OptionalNotNull()
  @IsString()
  @Length(3, 200)
  model?: string;
}

export class CreateSessionYuxiDto {
  @ApiPropertyOptional({ type: [String], maxItems: 20, description: 'Draft file ids bound to the initial input (not available yet: 422 not_implemented).' })
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(20)
  @IsString({ each: true })
  attachment_file_ids?: string[];
}

export class CreateSessionDto {
  @ApiProperty({ example: 'default-chatbot', minLength: 1, maxLength: 64, description: 'A visible saved agent.' })
  @IsString()
  @Length(1, 64)
  agent_id!: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 200, example: 'Quarterly report' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 200)
  title?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 128 })
  @OptionalNotNull()
  @IsString()
  @Length(1, 128)
  project_id?: string;

  @ApiPropertyOptional({ type: SessionAgentOverrideDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => SessionAgentOverrideDto)
  agent?: SessionAgentOverrideDto;

  @ApiPropertyOptional({ enum: ['default', 'always_ask', 'always_trust'] })
  @OptionalNotNull()
  @IsIn(['default', 'always_ask', 'always_trust'])
  tool_approval_mode?: 'default' | 'always_ask' | 'always_trust';

  @ApiPropertyOptional({ oneOf: AGENT_INPUT_SCHEMA.oneOf, description: 'Initial input: a string or up to 20 ordered user messages. Omit for an empty session.' })
  @OptionalNotNull()
  @IsAgentInput()
  input?: unknown;

  @ApiPropertyOptional({ type: CreateSessionYuxiDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => CreateSessionYuxiDto)
  yuxi?: CreateSessionYuxiDto;

  @ApiPropertyOptional({ description: 'Answer with text/event-stream (the session event stream) starting with agent.session.created; requires input.' })
  @OptionalNotNull()
  @IsBoolean()
  stream?: boolean;
}
