import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ERROR_CODES } from '#libs/errors';
import { INPUT_STATUSES, TURN_STATUSES, WAITPOINT_KINDS } from '#libs/engine';

const ERROR_TYPES = [...new Set(Object.values(ERROR_CODES).map((spec) => spec.type))];

export class FieldErrorDto {
  @ApiProperty({ description: 'The field, as a path into the request (`input[0].content`, `limits.max_tool_calls`, `body`, `response`, `answers.<question_id>`).', example: 'agent_id' })
  field!: string;
  @ApiProperty({ type: [String], minItems: 1, description: 'What is wrong with it.', example: ['must be longer than or equal to 1 characters'] })
  errors!: string[];
}

/**
 * What `details` may hold, by code. Open (`additionalProperties`): a code may gain diagnostics;
 * clients read the keys they know.
 */
export class ErrorDetailsDto {
  @ApiPropertyOptional({ type: [FieldErrorDto], description: '`validation_failed`, `invalid_agent`, `waitpoint_incomplete`: every problem, by field.' })
  fields?: FieldErrorDto[];
  @ApiPropertyOptional({ type: [String], description: '`method_not_allowed`: the methods of the path (also in the `Allow` header).', example: ['GET', 'POST'] })
  allow?: string[];
  @ApiPropertyOptional({ type: [String], description: '`unknown_event_type`: the event types of the protocol.' })
  allowed?: string[];
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: '`rate_limited`, `authentication_throttled`, `too_many_large_bodies`: seconds to wait (also in the `Retry-After` header).' })
  retry_after?: number;
  @ApiPropertyOptional({ description: '`idempotency_conflict`: the key that was already used with a different intent.' })
  idempotency_key?: string;
  @ApiPropertyOptional({ enum: INPUT_STATUSES, description: '`state_conflict` on an input: its status.' })
  status?: string;
  @ApiPropertyOptional({ type: String, nullable: true, description: '`state_conflict` on a cancel with `expected_run_id`: the current run of the turn.' })
  current_run_id?: string | null;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: '`state_conflict` on archive: the pending inputs.' })
  queued_input_count?: number;
  @ApiPropertyOptional({
    enum: [...WAITPOINT_KINDS],
    description: '`waitpoint_incomplete`: the kind of waitpoint the response must resolve; `turn_requires_action`: the kind of waitpoint the turn waits at.',
  })
  kind?: string;
  @ApiPropertyOptional({ type: String, nullable: true, description: '`waitpoint_stale`, `turn_requires_action`: the waitpoint the turn waits at (null: none).' })
  waitpoint_id?: string | null;
  @ApiPropertyOptional({ description: '`turn_requires_action`, `turn_cancelling`: the active turn that refuses the message; `state_conflict` on a fork after a turn: that turn, not finished.' })
  turn_id?: string;
  @ApiPropertyOptional({ enum: TURN_STATUSES, description: '`waitpoint_stale`, `state_conflict` on a fork after a turn: the status of the turn.' })
  turn_status?: string;
  @ApiPropertyOptional({ format: 'uuid', description: '`state_conflict` on a member of a cooperation tree (delete, fork): the root session to act on instead.' })
  root_session_id?: string;
  @ApiPropertyOptional({ type: [String], description: '`waitpoint_stale`: question or call ids that are not part of the waitpoint.' })
  unknown_ids?: string[];
  @ApiPropertyOptional({
    pattern: '^[0-9a-f]{32}$',
    description: '`file_already_bound`, `attachment_busy`, `file_not_ready`, and `not_found` on an attachment id of a submission: the file concerned.',
  })
  file_id?: string;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: '`file_too_large`: the largest file accepted, in bytes.' })
  limit_bytes?: number;
  @ApiPropertyOptional({
    oneOf: [{ type: 'integer', minimum: 1 }, { type: 'string' }],
    description: '`api_key_limit`: the most live API keys one user may hold (MAX_KEYS_PER_USER), an integer; `budget_exceeded`: the limit key the budget reached (`model_calls`, `cost_microusd`…), a string.',
  })
  limit?: number | string;
  @ApiPropertyOptional({ description: '`budget_exceeded`: the budget without room.' })
  budget_id?: string;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`budget_exceeded`: the value of the limit reached.' })
  limit_value?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`budget_exceeded`: what was spent of it in the budget\'s period (committed plus held by calls in flight).' })
  spent?: number;
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    description:
      '`file_quota_exceeded`: the bytes the caller\'s account stores now (uploads, inline and tool images, not counting this request\'s); `session_image_quota_exceeded`: the bytes of the session\'s images now; `storage_quota_exceeded`: the bytes the owner\'s sessions store, as last measured.',
  })
  used_bytes?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`file_quota_exceeded`: the account\'s storage quota in bytes (FILE_QUOTA_BYTES); `session_image_quota_exceeded`: SESSION_IMAGE_BYTES; `storage_quota_exceeded`: STORAGE_QUOTA_BYTES.' })
  quota_bytes?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: '`too_many_large_bodies`: how many request bodies over 1 MiB a user may have in flight at once (MAX_CONCURRENT_LARGE_BODIES).' })
  max_in_flight?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`file_quota_exceeded`: the caller\'s drafts now (uploads not attached yet).' })
  drafts?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: '`file_quota_exceeded`: how many drafts the caller may hold (FILE_QUOTA_DRAFTS).' })
  quota_drafts?: number;
  @ApiPropertyOptional({ enum: ['preparing', 'ready'], description: '`state_conflict` on a promote: the input\'s attachment status (`preparing`: promote it once ready).' })
  attachment_status?: string;
  @ApiPropertyOptional({ description: '`file_type_not_allowed`, `file_type_mismatch`: the sanitised filename of the upload.' })
  filename?: string;
  @ApiPropertyOptional({ type: String, nullable: true, description: '`file_type_not_allowed`, `file_type_mismatch`: the type detected from the bytes (null: none recognised).' })
  detected_type?: string | null;
}

export class ErrorDetailDto {
  @ApiProperty({ enum: Object.keys(ERROR_CODES), enumName: 'ErrorCode', description: 'Stable machine-readable code; branch on this, never on message.' })
  code!: string;
  @ApiProperty({ description: 'For people; may change.' }) message!: string;
  @ApiProperty({ enum: ERROR_TYPES, enumName: 'ErrorType', description: 'The class of the error.' })
  type!: string;
  @ApiProperty({ description: 'Whether the same request may succeed later (honour Retry-After where given).' }) retryable!: boolean;
  @ApiProperty({ description: 'Same as the X-Request-Id response header.' }) request_id!: string;
  @ApiProperty({ type: ErrorDetailsDto, description: 'Structured diagnostics; `{}` when the code has none.' })
  details!: ErrorDetailsDto;
}

export class ErrorResponseDto {
  @ApiProperty({ type: ErrorDetailDto }) error!: ErrorDetailDto;
}
