import { COMPACTION_MODES, SessionTtlDto, TTL_RULE } from '#libs/agents';
import { ApiProperty, type ApiPropertyOptions } from '@nestjs/swagger';
import { IsIn, IsInt, IsString, IsUUID, Length, Max, Min } from 'class-validator';
import { Type } from 'class-transformer';
import { ApiHideProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { FORK_POSITIONS, type ForkPosition, SESSION_STATUSES, TURN_STATUSES, UsageDto, WaitpointDto } from '#libs/engine';
import { IsSessionMetadata, OptionalNotNull } from './validators.js';
import { SessionEnvironmentViewDto } from './environment-view.dto.js';
import { SessionBudgetDto } from './budget.dto.js';

/** The schema of a session's `metadata` (the bounds of METADATA_LIMITS). */
export const METADATA_SCHEMA = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 512 },
  maxProperties: 16,
  example: { channel: 'web' },
  description:
    'Your string labels for the session: at most 16 keys of 1–64 characters, values of at most 512 characters (else 422 naming the field). Never shown to the model; lists filter on them with `metadata[key]=value`.',
} as const;

export class ReceiptDto {
  @ApiProperty({ enum: ['yuxi.session.event.accepted'] }) object!: 'yuxi.session.event.accepted';
  @ApiProperty({ description: 'Identifies this acceptance.' }) event_id!: string;
  @ApiProperty() session_id!: string;
  @ApiProperty({ type: String, nullable: true }) input_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Null for messages (consumption is read from the input); a cancel, a resume or a tool_result names its turn.' }) turn_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Null for messages; a cancel names the turn\'s current run, a resume or a tool_result the new run that continues the turn (null while other tool results are awaited).' })
  run_id!: string | null;
  @ApiProperty({ enum: ['accepted'] }) status!: 'accepted';
}

export class CurrentTurnDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: TURN_STATUSES }) status!: string;
  @ApiProperty({ type: String, nullable: true }) current_run_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) result_run_id!: string | null;
  @ApiProperty({ type: WaitpointDto, nullable: true, description: 'What the turn waits for while requires_action, else null.' }) waitpoint!: object | null;
}

export class SpawnedByDto {
  @ApiProperty({ format: 'uuid' }) turn_id!: string;
  @ApiProperty() call_id!: string;
}

export class ForkedFromDto {
  @ApiProperty({ format: 'uuid', description: 'The session the fork was made of.' }) session_id!: string;
  @ApiProperty({ format: 'uuid', description: 'The turn it was made at (a turn of that session or one it inherited).' }) turn_id!: string;
  @ApiProperty({ enum: FORK_POSITIONS, description: '`after`: the history up to the end of that turn; `before`: up to its start (to edit and resend).' }) position!: ForkPosition;
}

export class SubagentInfoDto {
  @ApiProperty() name!: string;
  @ApiProperty() task!: string;
}

export class SessionYuxiDto {
  @ApiProperty() title!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The project whose workdir the session shares; null: a workdir of its own. Sessions from before projects existed may hold a free label here.' })
  project_id!: string | null;
  @ApiProperty() is_pinned!: boolean;
  @ApiProperty() archived!: boolean;
  @ApiProperty() unread!: boolean;
  @ApiProperty({ enum: ['default', 'always_ask', 'always_trust'] }) tool_approval_mode!: string;
  @ApiProperty({ type: String, enum: [...COMPACTION_MODES, null], nullable: true, description: 'The session\'s override of the agent\'s compaction mode for later inputs; null: the agent\'s.' })
  compaction_mode!: string | null;
  @ApiProperty() queue_paused!: boolean;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Pending inputs not yet consumed by a turn.' }) queued_input_count!: number;
  @ApiProperty({ type: CurrentTurnDto, nullable: true, description: 'Overview of the latest turn.' }) current_turn!: CurrentTurnDto | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'Cooperation: the coordinator session that spawned this member; null on a root session.' }) parent_session_id!: string | null;
  @ApiProperty({ format: 'uuid', description: 'Cooperation: the root of this session\'s tree (a root names itself).' }) root_session_id!: string;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Cooperation: 0 for a root, 1 for its members, and so on.' }) depth!: number;
  @ApiProperty({ type: SpawnedByDto, nullable: true, description: 'Cooperation: the coordinator\'s call that created this member (its id is derived from it); null on a root.' })
  spawned_by!: SpawnedByDto | null;
  @ApiProperty({ type: SubagentInfoDto, nullable: true, description: 'Cooperation: the name and task the coordinator gave this member; null on a root.' })
  subagent!: SubagentInfoDto | null;
  @ApiProperty({ type: ForkedFromDto, nullable: true, description: 'Fork: the session and turn this session was forked from; null: not a fork. A fork\'s history is its source\'s up to that point (shared, not copied), then its own.' })
  forked_from!: ForkedFromDto | null;
  @ApiProperty(METADATA_SCHEMA)
  metadata!: Record<string, string>;
  @ApiProperty({
    type: 'integer',
    minimum: 1,
    description:
      'Starts at 1; every update made through the session routes (update, archive, delete) adds one; turns and inputs do not. Send it as `If-Match` on an update to refuse a stale write (412 `revision_mismatch`); the ETag of the session\'s GET and update responses is this number, quoted.',
  })
  revision!: number;
  @ApiProperty({ type: ReceiptDto, nullable: true, description: 'Only on the create response that accepted an input; null on reads.' })
  receipt!: ReceiptDto | null;
  @ApiProperty({
    type: SessionTtlDto,
    nullable: true,
    description: `The TTL the session goes by, resolved when it was created (or its \`yuxi.ttl\` updated): per field the shortest of its own, its project's and its agent's; null: none. Cooperation members show null: they go with their root. ${TTL_RULE}`,
  })
  ttl!: SessionTtlDto | null;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description:
      'Unix seconds: when the TTL deletes the session if it stays idle from now on (with an archive TTL only: when it archives it, null once archived); null without a TTL. A later input or turn moves it; an active turn or a pending input postpones the deletion (or archive) until it has settled. By the lifecycle clock (the database\'s).',
  })
  expires_at!: number | null;
  @ApiPropertyOptional({
    type: SessionBudgetDto,
    nullable: true,
    description: 'The session\'s own budget (`yuxi.budget` of create and update; a lifetime budget on the session and its tree); null: none. Shown by create, update, get and list; events leave it out.',
  })
  budget?: SessionBudgetDto | null;
  @ApiPropertyOptional({
    type: UsageDto,
    description: 'On the GET of the session only: what it used, summed over its usage ledger (every model call, compaction and MCP sampling request, tool call and sandbox command of its turns), with its cost at the prices in force at each call.',
  })
  usage?: UsageDto;
}

export class SessionAgentDto {
  @ApiProperty() id!: string;
  @ApiProperty({ description: 'Effective model of the session configuration snapshot.' }) model!: string;
}

const ARGUMENTS_DESCRIPTION = 'The arguments the model produced: the JSON object they hold, or the text as sent when it is not one.';
const ARGUMENTS_SCHEMA: ApiPropertyOptions = { oneOf: [{ type: 'object', additionalProperties: true }, { type: 'string' }], description: ARGUMENTS_DESCRIPTION };

export class ApprovalRequestDto {
  @ApiProperty({ enum: ['mcp_tool_call'] }) type!: 'mcp_tool_call';
  @ApiProperty({ description: 'Always `yuxi`: approvals here cover every server-executed tool (builtin or MCP); the item of the call says which.' }) server_label!: string;
  @ApiProperty() name!: string;
  @ApiProperty(ARGUMENTS_SCHEMA) arguments!: unknown;
  @ApiProperty() message!: string;
}

export class RequiredActionDto {
  @ApiProperty({
    enum: ['function_call', 'mcp_approval_request'],
    description: '`function_call`: run a client function and submit its result (`agent.session.input.tool_result` or `tool_result`); `mcp_approval_request`: decide a call (`agent.session.input.mcp_approval_request_result` with this `request_id`, or `yuxi.session.input.resume`).',
  })
  type!: 'function_call' | 'mcp_approval_request';
  @ApiProperty() turn_id!: string;
  @ApiPropertyOptional({ description: 'function_call: the call to answer.' }) call_id?: string;
  @ApiPropertyOptional({ description: 'function_call: the function.' }) name?: string;
  @ApiPropertyOptional({ ...ARGUMENTS_SCHEMA, description: `function_call: ${ARGUMENTS_DESCRIPTION}` }) arguments?: unknown;
  @ApiPropertyOptional({ description: 'mcp_approval_request: echo it in the answer (it names the turn, the waitpoint and the call).' }) request_id?: string;
  @ApiPropertyOptional({ type: ApprovalRequestDto, description: 'mcp_approval_request: what is to be approved.' }) request?: ApprovalRequestDto;
}

export class SessionDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['agent.session'] }) object!: 'agent.session';
  @ApiProperty({ type: SessionAgentDto }) agent!: SessionAgentDto;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds of the latest receipt, consumption or run; presentation updates do not move it.' })
  last_active_at!: number;
  @ApiProperty({ enum: SESSION_STATUSES }) status!: string;
  @ApiProperty({ type: SessionEnvironmentViewDto, description: 'The upstream Agents API\'s environment: `{"type": "none"}`, or the hosted workspace the session (and its tree) works in.' })
  environment!: SessionEnvironmentViewDto;
  @ApiProperty({ ...METADATA_SCHEMA, description: 'The same map as `yuxi.metadata`, where the upstream Agents API shows it.' }) metadata!: Record<string, string>;
  @ApiProperty({ type: 'object', additionalProperties: false, nullable: true, enum: [null], description: 'Always null here: what the session used is `yuxi.usage` (on the GET of the session), and each run\'s and turn\'s own `yuxi.usage`.' }) usage!: null;
  @ApiProperty({
    type: [RequiredActionDto],
    description:
      'What the session waits for, in the upstream Agents API\'s form: the open waitpoint\'s client tool calls and calls to approve (empty otherwise). Questions and budget stops have no upstream form: read `yuxi.current_turn.waitpoint`.',
  })
  required_actions!: RequiredActionDto[];
  @ApiProperty({ type: String, nullable: true, description: 'With status `failed`: a sentence naming the failed turn (its `error` says what failed); null otherwise.' }) error!: string | null;
  @ApiProperty({ type: SessionYuxiDto }) yuxi!: SessionYuxiDto;
}

export class SessionDeletedDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['agent.session'] }) object!: 'agent.session';
  @ApiProperty({ enum: [true] }) deleted!: true;
}

export class SessionListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [SessionDto] }) data!: SessionDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class ListQueryDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'The `last_id` of the previous page (400 `invalid_cursor` when it is not an id of this list).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  after?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, description: 'Page size (default 50 for sessions and the audit trail, 20 for turns, items and automations).' })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  @ApiPropertyOptional({ enum: ['asc', 'desc'], default: 'desc', description: 'By creation: `desc` newest first, `asc` oldest first.' })
  @OptionalNotNull()
  @IsIn(['asc', 'desc'])
  order?: 'asc' | 'desc';
}

export class SessionListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'Only the sessions of this agent.' }) @OptionalNotNull() @IsString() @Length(1, 64) agent_id?: string;
  // Exactly `true` or `false`: `1`, `yes` and the like are 422, never silently read as false.
  @ApiPropertyOptional({ enum: ['true', 'false'], default: 'false', description: 'The archive (`true`) or the active sessions (`false`, the default: the list shows active sessions).' })
  @OptionalNotNull()
  @IsIn(['true', 'false'])
  archived?: string;
  @ApiPropertyOptional({ enum: ['true', 'false'], description: 'Only pinned (`true`) or only unpinned (`false`) sessions; omitted: both.' })
  @OptionalNotNull()
  @IsIn(['true', 'false'])
  is_pinned?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Cooperation: the sessions of this tree (its root and every member). Omitted: root sessions only (members are listed through their tree).' })
  @OptionalNotNull()
  @IsUUID()
  root_session_id?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Only the direct forks of this session (`yuxi.forked_from.session_id`). Forks are root sessions, so the default list shows them too.' })
  @OptionalNotNull()
  @IsUUID()
  forked_from?: string;
  // Gathered from `metadata[key]=value` pairs (gatherMetadataFilter); documented on the route as a deepObject parameter.
  @ApiHideProperty()
  @OptionalNotNull()
  @IsSessionMetadata()
  metadata?: Record<string, string>;
}

export class ReceiptQueryDto {
  @ApiProperty({ minLength: 1, maxLength: 128 })
  @IsString()
  @Length(1, 128)
  idempotency_key!: string;
}
