import { COMPACTION_MODES } from '#libs/agents';
import { ApiProperty } from '@nestjs/swagger';
import { InputDto } from '#libs/inputs';
import { ItemDto, TurnContextDto } from '#libs/turns';
import { SESSION_STATUSES } from '../session-view.js';
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
  @ApiProperty({
    type: 'object',
    properties: {},
    additionalProperties: false,
    description: 'Runtime state of cooperation trees: an empty object until subagents exist (then `cooperation`).',
  })
  agent_state!: Record<string, never>;
}
