import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsObject, IsString, Length, Matches, ValidateNested } from 'class-validator';
import { APPROVAL_PIN_RULE, ENVIRONMENT_DEFAULT_RULE, EnvironmentParamDto, MODEL_OVERRIDE_RULE, SessionTtlDto, TTL_RULE } from '#libs/agents';
import { AGENT_INPUT_SCHEMA } from './input.schema.js';
import { SessionBudgetParamDto } from './budget.dto.js';
import { METADATA_SCHEMA } from './session.dto.js';
import { IsAgentInput, IsSessionMetadata, OptionalNotNull } from './validators.js';

export const MAX_ATTACHMENTS = 20;
export const FILE_ID_PATTERN = /^[0-9a-f]{32}$/;

/** `yuxi.attachment_file_ids`, the same on session create and on a message. */
export const ATTACHMENT_FILE_IDS_SCHEMA: ApiPropertyOptions = {
  type: 'array',
  maxItems: MAX_ATTACHMENTS,
  uniqueItems: true,
  items: { type: 'string', pattern: '^[0-9a-f]{32}$' },
  example: ['0123456789abcdef0123456789abcdef'],
  description:
    'Draft file ids (POST /files) attached to this submission\'s input, at most 20, in order (the order is part of the idempotency intent). Each must be a live draft of the caller: unknown or expired → 404 and nothing is stored; attached already → 409 `file_already_bound`. The input is accepted at once with `attachment_status: preparing` and runs once a worker has put the files in the session\'s workdir. Requires a non-empty input.',
};

export class SessionAgentOverrideDto {
  @ApiPropertyOptional({ description: `Model override, \`provider:model\`. ${MODEL_OVERRIDE_RULE}`, example: 'scripted:echo' })
  @OptionalNotNull()
  @IsString()
  @Length(3, 200)
  model?: string;
}

/** The description of a session's own `yuxi.ttl` (create and update). */
export const SESSION_TTL_DESCRIPTION = `The session's own TTL: each field at most what its project's and its agent's \`ttl\` set (longer: 422 naming the field). ${TTL_RULE}`;

export class CreateSessionYuxiDto {
  @ApiPropertyOptional(ATTACHMENT_FILE_IDS_SCHEMA)
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_ATTACHMENTS)
  @ArrayUnique({ message: 'attachment_file_ids must not repeat a file' })
  @Matches(FILE_ID_PATTERN, { each: true, message: 'each attachment file id is 32 lowercase hexadecimal characters' })
  attachment_file_ids?: string[];

  @ApiPropertyOptional(METADATA_SCHEMA)
  @OptionalNotNull()
  @IsSessionMetadata()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ type: SessionBudgetParamDto, description: 'A lifetime budget on the session (and its tree): see `/agents/budgets`.' })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => SessionBudgetParamDto)
  budget?: SessionBudgetParamDto;

  @ApiPropertyOptional({ type: SessionTtlDto, description: SESSION_TTL_DESCRIPTION })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => SessionTtlDto)
  ttl?: SessionTtlDto;
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

  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 128,
    format: 'uuid',
    description:
      'A project of the caller (POST /projects): the session shares the project\'s workdir with its other sessions. A missing, deleted or another caller\'s project is 404 and nothing is stored.',
  })
  @OptionalNotNull()
  @IsString()
  @Length(1, 128)
  project_id?: string;

  @ApiPropertyOptional({ type: SessionAgentOverrideDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => SessionAgentOverrideDto)
  agent?: SessionAgentOverrideDto;

  @ApiPropertyOptional({ enum: ['default', 'always_ask', 'always_trust'], description: `The session's approval mode (default: the agent's). ${APPROVAL_PIN_RULE}` })
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

  @ApiPropertyOptional({
    type: EnvironmentParamDto,
    description: `The upstream Agents API's environment param (the official SDK always sends one): \`{"type": "none"}\` for none, \`openai_hosted\` for a sandboxed workspace hosted by this deployment; omitted: the agent's default (none when it has none). Each problem is 422 naming its field (\`validation_failed\`); a file of \`files\` that is not the caller's is 404. ${ENVIRONMENT_DEFAULT_RULE}`,
  })
  @OptionalNotNull()
  @IsObject({ message: 'environment must be an object with a `type`' })
  environment?: Record<string, unknown>;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `The same map as \`yuxi.metadata\` (the upstream Agents API's place for it); sending both with different values is 422. ${METADATA_SCHEMA.description}` })
  @OptionalNotNull()
  @IsSessionMetadata()
  metadata?: Record<string, string>;

  @ApiPropertyOptional({ description: 'Answer with text/event-stream (the session event stream) starting with agent.session.created; requires input.' })
  @OptionalNotNull()
  @IsBoolean()
  stream?: boolean;
}
