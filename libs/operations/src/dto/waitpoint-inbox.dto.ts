import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';
import { ListQueryDto, SessionOwnerDto } from '#libs/protocol';
import { WaitpointQuestionDto, WaitpointToolCallDto } from '#libs/engine';

export const INBOX_STATUSES = ['open'] as const;
export const INBOX_KINDS = ['question', 'approval', 'client_tool', 'cooperation', 'budget'] as const;

/** The inbox's query: the page (newest first by default), the status (only `open` is kept) and the kind. */
export class WaitpointInboxQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: INBOX_STATUSES, default: 'open', description: 'Only open waitpoints are listed (a resolved one is a `waitpoint` step of its session\'s timeline).' })
  @OptionalNotNull()
  @IsIn(INBOX_STATUSES)
  status?: (typeof INBOX_STATUSES)[number];

  @ApiPropertyOptional({
    enum: INBOX_KINDS,
    description: 'Only this kind. Without it: the waitpoints a person or the client must resolve (question, approval, client_tool, budget); a coordinator waiting for its members (`cooperation`) only when asked.',
  })
  @OptionalNotNull()
  @IsIn(INBOX_KINDS)
  kind?: (typeof INBOX_KINDS)[number];
}

export class OpenWaitpointDto {
  @ApiProperty({ description: 'The waitpoint\'s id: the `waitpoint_id` an answer or approval names.' }) id!: string;
  @ApiProperty({ enum: ['admin.waitpoint'] }) object!: 'admin.waitpoint';
  @ApiProperty({ enum: INBOX_KINDS }) kind!: string;
  @ApiProperty({ enum: INBOX_STATUSES }) status!: 'open';
  @ApiProperty() session_id!: string;
  @ApiProperty({ description: 'The user the session belongs to.' }) owner_id!: string;
  @ApiProperty({ type: SessionOwnerDto, description: 'Who that user is, for people to read (as on the admin sessions list).' }) owner!: SessionOwnerDto;
  @ApiProperty() agent_id!: string;
  @ApiProperty() turn_id!: string;
  @ApiProperty({ description: 'The run that stopped here.' }) run_id!: string;
  @ApiPropertyOptional({ type: [WaitpointQuestionDto], description: 'kind=question.' }) questions?: WaitpointQuestionDto[];
  @ApiPropertyOptional({ type: [WaitpointToolCallDto], description: 'kind=approval (calls to approve), client_tool (calls to execute), cooperation (the wait calls).' })
  tool_calls?: WaitpointToolCallDto[];
  @ApiPropertyOptional({ description: 'kind=budget: the budget without room.' }) budget_id?: string;
  @ApiPropertyOptional({ description: 'kind=budget: the limit key it reached.' }) limit?: string;
  @ApiPropertyOptional({ type: 'integer', description: 'kind=budget: what was spent of that limit when the turn stopped.' }) spent?: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when the turn stopped here.' }) created_at!: number;
}

export class OpenWaitpointListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [OpenWaitpointDto] }) data!: OpenWaitpointDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
