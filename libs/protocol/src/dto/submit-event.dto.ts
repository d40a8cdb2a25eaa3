import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, Equals, IsArray, IsIn, IsObject, IsString, Length, Matches, ValidateNested } from 'class-validator';
import { APPROVAL_PIN_RULE, MODEL_OVERRIDE_RULE } from '#libs/agents';
import { INPUT_MODES } from '#libs/engine';
import { ATTACHMENT_FILE_IDS_SCHEMA, FILE_ID_PATTERN, MAX_ATTACHMENTS } from './create-session.dto.js';
import { AGENT_INPUT_SCHEMA } from './input.schema.js';
import { IsAgentInput, OptionalNotNull } from './validators.js';

export class MessageEventYuxiDto {
  @ApiPropertyOptional({
    enum: INPUT_MODES,
    description:
      'follow_up queues FIFO; steer runs ahead of all follow-ups (into the executing turn at its next safe boundary). Omitted: steer while a turn executes, follow-up when idle; 409 while the turn waits for an answer or is being cancelled.',
  })
  @OptionalNotNull()
  @IsIn(INPUT_MODES)
  mode?: 'follow_up' | 'steer';

  @ApiPropertyOptional({ description: `Model for this input only (follow-ups only), \`provider:model\`. ${MODEL_OVERRIDE_RULE}` })
  @OptionalNotNull()
  @IsString()
  @Length(3, 200)
  model?: string;

  @ApiPropertyOptional({ enum: ['default', 'always_ask', 'always_trust'], description: `Approval mode for this input only (follow-ups only). ${APPROVAL_PIN_RULE}` })
  @OptionalNotNull()
  @IsIn(['default', 'always_ask', 'always_trust'])
  tool_approval_mode?: 'default' | 'always_ask' | 'always_trust';

  @ApiPropertyOptional(ATTACHMENT_FILE_IDS_SCHEMA)
  @OptionalNotNull()
  @IsArray()
  @ArrayMaxSize(MAX_ATTACHMENTS)
  @ArrayUnique({ message: 'attachment_file_ids must not repeat a file' })
  @Matches(FILE_ID_PATTERN, { each: true, message: 'each attachment file id is 32 lowercase hexadecimal characters' })
  attachment_file_ids?: string[];
}

export class MessageEventDto {
  @ApiProperty({ enum: ['agent.session.input.message'] })
  @Equals('agent.session.input.message')
  type!: 'agent.session.input.message';

  @ApiProperty({ oneOf: AGENT_INPUT_SCHEMA.oneOf, description: 'A string or up to 20 ordered user messages.' })
  @IsAgentInput()
  input!: unknown;

  @ApiPropertyOptional({ type: MessageEventYuxiDto })
  @OptionalNotNull()
  @ValidateNested()
  @Type(() => MessageEventYuxiDto)
  yuxi?: MessageEventYuxiDto;
}

export class CompactEventDto {
  @ApiProperty({ enum: ['yuxi.session.input.compact'] })
  @Equals('yuxi.session.input.compact')
  type!: 'yuxi.session.input.compact';

  @ApiPropertyOptional({ maxLength: 10000, description: 'Added to the summary prompt for this compaction only (e.g. "keep every order number").' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 10000)
  instructions?: string;
}

/** The event types of the protocol; those not handled by this build answer 422 not_implemented. */
export const PROTOCOL_EVENT_TYPES = [
  'agent.session.input.message',
  'agent.session.input.cancel',
  'yuxi.session.input.promote',
  'yuxi.session.input.cancel_input',
  'yuxi.session.input.continue',
  'yuxi.session.input.resume',
  'yuxi.session.input.compact',
  'yuxi.session.tree.stop',
  'yuxi.session.tree.continue',
  'tool_result',
  'agent.session.input.tool_result',
  'agent.session.input.mcp_approval_request_result',
] as const;

export class SubmitEventsDto {
  @ApiProperty({
    description: 'Exactly one event per request.',
    minItems: 1,
    maxItems: 1,
    type: 'array',
    items: {
      oneOf: [
        { $ref: getSchemaPath(MessageEventDto) },
        { $ref: '#/components/schemas/CancelTurnEventDto' },
        { $ref: '#/components/schemas/CancelInputEventDto' },
        { $ref: '#/components/schemas/PromoteInputEventDto' },
        { $ref: '#/components/schemas/ContinueQueueEventDto' },
        { $ref: '#/components/schemas/ResumeEventDto' },
        { $ref: '#/components/schemas/ToolResultEventDto' },
        { $ref: getSchemaPath(CompactEventDto) },
        { $ref: '#/components/schemas/TreeStopEventDto' },
        { $ref: '#/components/schemas/TreeContinueEventDto' },
        { $ref: '#/components/schemas/UpstreamToolResultEventDto' },
        { $ref: '#/components/schemas/UpstreamApprovalResultEventDto' },
      ],
    },
  })
  @IsArray()
  @ArrayMinSize(1, { message: 'events must contain exactly one event' })
  @ArrayMaxSize(1, { message: 'events must contain exactly one event; batches are not accepted' })
  @IsObject({ each: true })
  events!: Record<string, unknown>[];
}
