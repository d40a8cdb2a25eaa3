import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, Max, Min } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';
import { ListQueryDto } from '#libs/protocol';

/**
 * The full audit of a run (for an administrator signed in with a user token only; README
 * "Operations"): the exact request each of its model calls sent, recorded while MODEL_REQUEST_AUDIT=on.
 */

/** Requests a page shows unless asked: each is a whole prompt (the conversation so far, its images). */
export const MODEL_REQUESTS_PAGE = 10;

/** A run's requests are read in the order they were sent: oldest first unless asked. */
export class ModelRequestsQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: MODEL_REQUESTS_PAGE, description: `Page size (default ${MODEL_REQUESTS_PAGE}: each request is a whole prompt, the conversation so far with its images).` })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  override limit?: number;

  @ApiPropertyOptional({ enum: ['asc', 'desc'], default: 'asc', description: 'By the step\'s order in the turn: `asc` oldest first (the default), `desc` newest first.' })
  @OptionalNotNull()
  @IsIn(['asc', 'desc'])
  override order?: 'asc' | 'desc';
}

export class ModelRequestDto {
  @ApiProperty({ enum: ['model_request'] }) object!: 'model_request';
  @ApiProperty({ description: 'The model-call step that sent it (the `id` of a `model_call` step of the run on the timeline).' }) step_id!: string;
  @ApiProperty({ type: 'integer', description: 'The step\'s order within its turn.' }) seq!: number;
  @ApiProperty({ description: 'The model called, as the run names it (`provider:model`).' }) model!: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'The request exactly as sent, never its headers or credentials. `openai:` models: the Chat Completions request body (`model` without the `openai:` prefix, `messages` with the agent\'s instructions as the system message, `tools` when it had any, `stream`, `stream_options`). `scripted:` models: the provider-neutral request they are given (`model`, `instructions`, `messages`, `tools`). Images of a message are in it as sent (`data:` URLs).',
  })
  request!: Record<string, unknown>;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when the step was recorded.' }) created_at!: number;
}

export class ModelRequestListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ModelRequestDto], description: 'One page of the run\'s recorded requests, in step order.' }) data!: ModelRequestDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
