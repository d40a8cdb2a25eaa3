import { ApiProperty } from '@nestjs/swagger';

export class AgentYuxiDto {
  @ApiProperty({ enum: ['ask', 'always_trust'] }) tool_approval_mode!: string;
  @ApiProperty({ description: 'Whether this is a system agent visible to every caller.' }) system!: boolean;
}

export class AgentDto {
  @ApiProperty({ example: 'default-chatbot' }) id!: string;
  @ApiProperty({ enum: ['agent'] }) object!: 'agent';
  @ApiProperty() name!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ description: 'Effective model, `provider:model`.', example: 'scripted:echo' }) model!: string;
  @ApiProperty({ description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: AgentYuxiDto }) yuxi!: AgentYuxiDto;
}

export class AgentListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AgentDto] }) data!: AgentDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
