import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { Equals, IsBoolean, IsIn, IsObject, IsString, Length, MaxLength, ValidateNested } from 'class-validator';
import { IsToolOutput, OptionalNotNull } from './validators.js';

export class WaitpointAnswerDto {
  @ApiProperty({ minLength: 1, maxLength: 128, description: 'A question_id of the waitpoint.' }) question_id!: string;
  @ApiProperty({
    oneOf: [
      { type: 'string', maxLength: 10000 },
      { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 10000 } },
    ],
    description: 'One of the options (or any text where allow_other); an array only where multi_select is true.',
  })
  answer!: string | string[];
}

export class AnswerResponseDto {
  @ApiProperty({ enum: ['answer'] }) type!: 'answer';
  @ApiProperty({ type: [WaitpointAnswerDto], minItems: 1, maxItems: 100, description: 'Exactly one answer per question of the waitpoint.' }) answers!: WaitpointAnswerDto[];
}

export class ApprovalDecisionDto {
  @ApiProperty({ minLength: 1, maxLength: 128, description: 'A call_id of the waitpoint.' }) call_id!: string;
  @ApiProperty({ enum: ['approve', 'reject', 'approve_session'], description: 'approve_session: approve, and trust this tool for the rest of the session.' })
  decision!: string;
  @ApiPropertyOptional({ maxLength: 2000, description: 'Given to the model with a rejection.' }) message?: string;
}

export class ApprovalResponseDto {
  @ApiProperty({ enum: ['approval'] }) type!: 'approval';
  @ApiProperty({ type: [ApprovalDecisionDto], minItems: 1, maxItems: 100, description: 'Exactly one decision per tool call of the waitpoint.' }) decisions!: ApprovalDecisionDto[];
}

/** `yuxi.session.input.resume`: answers a question waitpoint or decides an approval waitpoint. */
export class ResumeEventDto {
  @ApiProperty({ enum: ['yuxi.session.input.resume'] })
  @Equals('yuxi.session.input.resume')
  type!: 'yuxi.session.input.resume';

  @ApiProperty({ minLength: 1, maxLength: 64 }) @IsString() @Length(1, 64) turn_id!: string;
  @ApiProperty({ minLength: 1, maxLength: 64 }) @IsString() @Length(1, 64) waitpoint_id!: string;

  @ApiProperty({ oneOf: [{ $ref: getSchemaPath(AnswerResponseDto) }, { $ref: getSchemaPath(ApprovalResponseDto) }] })
  @IsObject()
  response!: Record<string, unknown>;
}

/** `tool_result`: the output of one client-executed function call (as in OpenAI's Agents API). */
export class ToolResultEventDto {
  @ApiProperty({ enum: ['tool_result'] })
  @Equals('tool_result')
  type!: 'tool_result';

  @ApiProperty({ minLength: 1, maxLength: 64 }) @IsString() @Length(1, 64) turn_id!: string;
  @ApiProperty({ minLength: 1, maxLength: 128 }) @IsString() @Length(1, 128) call_id!: string;
  @ApiProperty({ description: 'false: the call failed; the output says why.' }) @IsBoolean() success!: boolean;
  @ApiProperty({ maxLength: 1048576, description: 'What the model gets as the call\'s output (often a JSON string). Past MAX_INPUT_TEXT_BYTES (UTF-8 bytes) it is stored cut, ending with a line that says how much was cut.' })
  @IsString()
  @MaxLength(1_048_576)
  output!: string;
}

/**
 * `agent.session.input.tool_result`: a client function call's result in the upstream Agents API's
 * form (what its official SDK sends); taken as `tool_result` with the same turn and call.
 */
export class UpstreamToolResultEventDto {
  @ApiProperty({ enum: ['agent.session.input.tool_result'] })
  @Equals('agent.session.input.tool_result')
  type!: 'agent.session.input.tool_result';

  @ApiProperty({ minLength: 1, maxLength: 64 }) @IsString() @Length(1, 64) turn_id!: string;
  @ApiProperty({ minLength: 1, maxLength: 128 }) @IsString() @Length(1, 128) call_id!: string;
  @ApiProperty({ description: 'false: the call failed; `error` (else the output) says why.' }) @IsBoolean() success!: boolean;

  @ApiPropertyOptional({
    oneOf: [
      { type: 'string', maxLength: 1048576 },
      { type: 'array', minItems: 1, maxItems: 100, items: { type: 'object', required: ['type', 'text'], properties: { type: { type: 'string', enum: ['input_text'] }, text: { type: 'string' } } } },
    ],
    description: 'What the model gets as the call\'s output: a string, or `input_text` parts (joined with newlines; images are not accepted here). Past MAX_INPUT_TEXT_BYTES it is stored cut.',
  })
  @OptionalNotNull()
  @IsToolOutput()
  output?: string | { type: 'input_text'; text: string }[];

  @ApiPropertyOptional({ maxLength: 1048576, description: 'success=false: what went wrong (the output the model gets).' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(1_048_576)
  error?: string;
}

/**
 * `agent.session.input.mcp_approval_request_result`: a decision on one call of an approval
 * waitpoint in the upstream Agents API's form, `request_id` as the session's `required_actions`
 * show it. The waitpoint is answered as a whole: with several calls, decide them together with
 * `yuxi.session.input.resume`.
 */
export class UpstreamApprovalDecisionDto {
  @ApiProperty({ enum: ['mcp_tool_call'] })
  @Equals('mcp_tool_call')
  type!: 'mcp_tool_call';

  @ApiProperty({ enum: ['approve', 'deny', 'cancel'], description: '`deny` and `cancel` both reject the call (the model is told it was not approved).' })
  @IsIn(['approve', 'deny', 'cancel'])
  decision!: 'approve' | 'deny' | 'cancel';
}

export class UpstreamApprovalResultEventDto {
  @ApiProperty({ enum: ['agent.session.input.mcp_approval_request_result'] })
  @Equals('agent.session.input.mcp_approval_request_result')
  type!: 'agent.session.input.mcp_approval_request_result';

  @ApiProperty({ minLength: 1, maxLength: 300, description: 'The `request_id` of an `mcp_approval_request` in the session\'s `required_actions`.' })
  @IsString()
  @Length(1, 300)
  request_id!: string;

  @ApiProperty({ type: UpstreamApprovalDecisionDto })
  @ValidateNested()
  @Type(() => UpstreamApprovalDecisionDto)
  response!: UpstreamApprovalDecisionDto;
}
