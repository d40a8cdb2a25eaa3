import { ApiProperty, ApiPropertyOptional, type ApiPropertyOptions } from '@nestjs/swagger';
import { CallUsageDto, PublicErrorDto, RUN_STATUSES, SESSION_STATUSES, STEP_KINDS, STEP_STATUSES, TURN_STATUSES, UsageDto, WaitpointDto } from '#libs/engine';
import { ApprovalDecisionDto, WaitpointAnswerDto } from '#libs/protocol';

/**
 * The operator timeline of a session (README "Operations", operator API): a page of
 * its turns, each with its runs and each run's committed steps. Times are Unix seconds, durations
 * milliseconds. What a model was sent (the exact requests) is never part of the timeline: where the
 * deployment records it (MODEL_REQUEST_AUDIT=on, `model_requests: recorded`), an administrator with
 * a user token reads it per run (`GET …/runs/{run_id}/model-requests`).
 */

export const APPROVAL_DECISIONS = ['approve', 'reject', 'approve_session'] as const;
export const TIMELINE_WAITPOINT_KINDS = ['question', 'approval', 'client_tool', 'cooperation'] as const;

export class TimelineLeaseDto {
  @ApiProperty({ description: 'The worker holding (or that last held, while executing) the run.' }) owner!: string;
  @ApiProperty({ type: 'integer', description: 'The fencing epoch the lease was granted under: every lease of a session gets a higher one.' }) epoch!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds; a lease not renewed by then is taken over.' }) expires_at!: number | null;
}

export class TimelineModelCallDto {
  @ApiProperty({ type: String, nullable: true, description: 'The model called (null on steps recorded before it was).' }) model!: string | null;
  @ApiProperty({ type: CallUsageDto, nullable: true, description: 'Tokens of this call, as the provider reported them.' }) usage!: CallUsageDto | null;
  @ApiProperty({ description: 'The text the model answered (cut, see `truncated`).' }) text!: string;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'How many tools it asked for (each is a tool_call step of the same run, or a waitpoint).' }) tool_call_count!: number;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why the model stopped, as the provider said it: `stop`, `tool_calls`, `length` (the output limit cut it), `content_filter`, … Null when the provider gave none, and on steps recorded before finish reasons were kept.',
    example: 'stop',
  })
  finish_reason!: string | null;
}

export class TimelineToolCallDto {
  @ApiProperty() call_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'The arguments as the model wrote them: a JSON string, possibly invalid (cut, see `truncated`).' }) arguments!: string;
  @ApiProperty({ type: Boolean, nullable: true, description: 'null while the call runs (or ran and the run was lost before it recorded a result).' }) success!: boolean | null;
  @ApiProperty({ type: String, nullable: true, description: 'The result the model was given (cut, see `truncated`); null without a result.' }) output!: string | null;
  @ApiProperty({
    type: 'string',
    nullable: true,
    enum: [...APPROVAL_DECISIONS, null],
    description: 'The decision of the approval waitpoint that asked for this call, if one did (null: the call needed no approval, or is still waiting for it).',
  } as ApiPropertyOptions)
  approval!: (typeof APPROVAL_DECISIONS)[number] | null;
}

export class TimelineWaitpointResponseDto {
  @ApiProperty({ enum: ['answer', 'approval', 'tool_results', 'cooperation'], description: 'How the waitpoint was resolved.' }) type!: string;
  @ApiPropertyOptional({ type: [WaitpointAnswerDto], description: 'type=answer: the answer to each question.' }) answers?: WaitpointAnswerDto[];
  @ApiPropertyOptional({ type: [ApprovalDecisionDto], description: 'type=approval: the decision on each call.' }) decisions?: ApprovalDecisionDto[];
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'type=cooperation: each wait call\'s `{success, output}` by call id.' }) results?: object;
}

export class TimelineWaitpointStepDto {
  @ApiProperty({ description: 'The id of the waitpoint this response resolved.' }) waitpoint_id!: string;
  @ApiProperty({ type: 'string', nullable: true, enum: [...TIMELINE_WAITPOINT_KINDS, null] } as ApiPropertyOptions) kind!: string | null;
  @ApiProperty({ type: TimelineWaitpointResponseDto, nullable: true }) response!: TimelineWaitpointResponseDto | null;
}

export class TimelineCompactionDto {
  @ApiProperty({ type: String, nullable: true, description: 'The compaction item holding the summary (null: there was nothing to compact).' }) item_id!: string | null;
  @ApiProperty({ type: String, nullable: true, enum: ['auto', 'manual', 'overflow', null] } as ApiPropertyOptions) trigger!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The model that summarised.' }) model!: string | null;
  @ApiProperty({ type: 'integer', nullable: true }) tokens_before!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) tokens_after!: number | null;
  @ApiProperty({ type: CallUsageDto, nullable: true }) usage!: CallUsageDto | null;
}

export class TimelineStepDto {
  @ApiProperty() id!: string;
  @ApiProperty({ type: 'integer', description: 'Order within the turn.' }) seq!: number;
  @ApiProperty({ enum: STEP_KINDS }) kind!: string;
  @ApiProperty({ enum: STEP_STATUSES, description: '`started`: a server tool call began and has no result yet.' }) status!: string;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when the step was recorded (a tool call: when it started).' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds: when its outcome was recorded; null while a tool call runs, and on steps recorded before this was kept.' })
  completed_at!: number | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description:
      'Milliseconds. model_call: from the end of the run\'s previous step (or the run\'s start) until the answer was recorded; tool_call: from its start to its result; null when not known.',
  })
  duration_ms!: number | null;
  @ApiProperty({ description: 'Whether a text field of the step was cut to its first 4000 characters.' }) truncated!: boolean;
  @ApiPropertyOptional({ type: TimelineModelCallDto, description: 'kind=model_call.' }) model_call?: TimelineModelCallDto;
  @ApiPropertyOptional({ type: TimelineToolCallDto, description: 'kind=tool_call.' }) tool_call?: TimelineToolCallDto;
  @ApiPropertyOptional({ type: TimelineWaitpointStepDto, description: 'kind=waitpoint: a waitpoint resolved (answered, approved, tool results, members settled).' })
  waitpoint?: TimelineWaitpointStepDto;
  @ApiPropertyOptional({ type: TimelineCompactionDto, description: 'kind=compaction.' }) compaction?: TimelineCompactionDto;
}

export class TimelineRunDto {
  @ApiProperty() id!: string;
  @ApiProperty({ type: 'integer', description: 'Order within the turn.' }) seq!: number;
  @ApiProperty({
    enum: RUN_STATUSES,
    description: '`interrupted`: its worker lost or released the lease and a successor run (resume_from_run_id) took over; `yielded`: it made way for a steer; `requires_action`: it stopped at a waitpoint.',
  })
  status!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ type: [String], description: 'Inputs this run consumed.' }) input_ids!: string[];
  @ApiProperty({ type: String, nullable: true, description: 'The run this one continues: after a yield, a waitpoint, or a takeover (the interrupted run).' })
  resume_from_run_id!: string | null;
  @ApiProperty({ description: 'Whether this run was interrupted and taken over (status `interrupted`).' }) interrupted!: boolean;
  @ApiProperty({ type: TimelineLeaseDto, nullable: true, description: 'The lease while the run executes; null once it ended or while it waits for a worker.' }) lease!: TimelineLeaseDto | null;
  @ApiProperty({ type: 'integer', description: 'The fencing epoch of the run\'s latest lease (0: never leased).' }) epoch!: number;
  @ApiProperty({ type: UsageDto, nullable: true }) usage!: UsageDto | null;
  @ApiProperty({ type: PublicErrorDto, nullable: true }) error!: PublicErrorDto | null;
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true }) started_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) completed_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Milliseconds from start to completion; null until both are known.' }) duration_ms!: number | null;
  @ApiProperty({ type: [TimelineStepDto] }) steps!: TimelineStepDto[];
}

export class TimelineTurnDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['admin.timeline.turn'] }) object!: 'admin.timeline.turn';
  @ApiProperty({ type: 'integer', description: 'Order within the session.' }) seq!: number;
  @ApiProperty({ enum: TURN_STATUSES }) status!: string;
  @ApiProperty() agent_id!: string;
  @ApiProperty() model!: string;
  @ApiProperty({ description: 'A cancel was accepted and the worker has not settled the turn yet.' }) cancellation_pending!: boolean;
  @ApiProperty({ type: WaitpointDto, nullable: true, description: 'The open waitpoint the turn waits at; its resolution is a `waitpoint` step.' }) waitpoint!: WaitpointDto | null;
  @ApiProperty({ type: UsageDto, nullable: true }) usage!: UsageDto | null;
  @ApiProperty({ type: PublicErrorDto, nullable: true }) error!: PublicErrorDto | null;
  @ApiProperty({ type: 'integer' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true }) started_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true }) completed_at!: number | null;
  @ApiProperty({ type: [TimelineRunDto], description: 'Oldest first.' }) runs!: TimelineRunDto[];
}

export class TimelineSessionDto {
  @ApiProperty() id!: string;
  @ApiProperty() owner_id!: string;
  @ApiProperty() agent_id!: string;
  @ApiProperty() model!: string;
  @ApiProperty() title!: string;
  @ApiProperty({ enum: SESSION_STATUSES }) status!: string;
  @ApiProperty({ type: String, nullable: true, description: 'Cooperation: the coordinator that spawned this session.' }) parent_session_id!: string | null;
  @ApiProperty({ description: 'Cooperation: the tree\'s root (the session itself on a root).' }) root_session_id!: string;
  @ApiProperty({ type: 'integer' }) created_at!: number;
}

export class TimelineMemberDto {
  @ApiProperty() id!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The name its coordinator gave it.' }) name!: string | null;
  @ApiProperty({ enum: SESSION_STATUSES }) status!: string;
  @ApiProperty() agent_id!: string;
  @ApiProperty({ type: 'integer' }) created_at!: number;
}

export class SessionTimelineDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [TimelineTurnDto], description: 'One page of turns (newest first by default), each with its runs and steps.' }) data!: TimelineTurnDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
  @ApiProperty({ type: TimelineSessionDto }) session!: TimelineSessionDto;
  @ApiProperty({ type: [TimelineMemberDto], description: 'Cooperation: the sessions this one spawned, oldest first (at most 100).' }) members!: TimelineMemberDto[];
  @ApiProperty({
    enum: ['recorded', 'not_recorded'],
    description:
      'The exact model requests (prompts) of the runs, never carried by the timeline itself. `recorded`: this deployment records them (MODEL_REQUEST_AUDIT=on; calls made while it was off have none): an administrator with a user token (JWT) reads a run\'s with `GET /api/v1/admin/sessions/{session_id}/runs/{run_id}/model-requests` (each read audited; API keys get 403 `user_token_required`, other roles 403 `forbidden`). `not_recorded`: the deployment does not record them (MODEL_REQUEST_AUDIT=off, the default).',
  })
  model_requests!: 'recorded' | 'not_recorded';
}
