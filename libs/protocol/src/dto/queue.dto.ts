import { COMPACTION_MODES } from '#libs/agents';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { InputDto, ItemDto, SESSION_STATUSES, TurnContextDto, UsageDto } from '#libs/engine';
import { CurrentTurnDto } from './session.dto.js';

export class QueueDto {
  @ApiProperty({ enum: ['yuxi.session.queue'] }) object!: 'yuxi.session.queue';
  @ApiProperty() session_id!: string;
  @ApiProperty({ description: 'Whether claiming is paused (after a cancel with pending inputs).' }) paused!: boolean;
  @ApiProperty({ type: [InputDto], description: 'Pending inputs in claim order: steer first, then follow-ups, each by received order.' })
  data!: InputDto[];
}

export class InputDetailDto extends InputDto {
  @ApiProperty({ type: [ItemDto], description: 'The history items the input became; empty while pending or after cancellation.' })
  items!: ItemDto[];
}

export class CooperationMemberDto {
  @ApiProperty({ format: 'uuid' }) session_id!: string;
  @ApiProperty({ format: 'uuid' }) parent_session_id!: string;
  @ApiProperty() agent_id!: string;
  @ApiProperty() name!: string;
  @ApiProperty({ type: 'integer', minimum: 1 }) depth!: number;
  @ApiProperty({ enum: ['idle', 'queued', 'in_progress', 'requires_action', 'completed', 'failed', 'cancelled'], description: 'queued: its input waits for a slot of the tree\'s cap.' }) status!: string;
  @ApiProperty({ type: String, nullable: true }) current_turn_id!: string | null;
  @ApiProperty() queue_paused!: boolean;
  @ApiProperty({ type: String, nullable: true, enum: ['question', 'approval', 'client_tool', 'cooperation', null], description: 'What its active turn waits at, if anything.' }) waitpoint_kind!: string | null;
}

export class CooperationStateDto {
  @ApiProperty({ format: 'uuid' }) root_session_id!: string;
  @ApiProperty({ description: 'The tree was stopped (`yuxi.session.tree.stop`) and not continued since.' }) stopped!: boolean;
  @ApiProperty({ description: 'Stopped, and some turn of the tree is still active (its cancellation is being cleaned up).' }) stopping!: boolean;
  @ApiProperty({ type: [CooperationMemberDto], description: 'Every member of the tree (not the root), by depth.' }) members!: CooperationMemberDto[];
  @ApiProperty({ type: UsageDto, description: 'What the whole tree used (root included): tokens, model and tool calls, and cost, summed over its usage ledger.' }) usage!: UsageDto;
}

export class AgentStateDto {
  @ApiPropertyOptional({ type: CooperationStateDto, description: 'Present for a root whose agent coordinates, and for every member of a tree.' }) cooperation?: CooperationStateDto;
}

export class SessionStateDto {
  @ApiProperty({ enum: ['yuxi.session.state'] }) object!: 'yuxi.session.state';
  @ApiProperty() session_id!: string;
  @ApiProperty({ enum: SESSION_STATUSES }) status!: string;
  @ApiProperty({ type: CurrentTurnDto, nullable: true }) current_turn!: CurrentTurnDto | null;
  @ApiProperty() queue_paused!: boolean;
  @ApiProperty({ type: 'integer', minimum: 0 }) queued_input_count!: number;
  @ApiProperty() archived!: boolean;
  @ApiProperty({
    type: TurnContextDto,
    nullable: true,
    description: 'The model context as of the latest turn that called a model: its size in tokens, the window, and the compaction it started from (the boundary). Null before any.',
  })
  context!: TurnContextDto | null;
  @ApiProperty({ type: String, enum: [...COMPACTION_MODES, null], nullable: true, description: 'The session\'s override of the agent\'s compaction mode; null: the agent\'s.' })
  compaction_mode!: string | null;
  @ApiProperty({ type: AgentStateDto, description: 'Runtime state of cooperation trees: empty for a session outside any (its agent does not coordinate and it is no member).' })
  agent_state!: AgentStateDto;
}
