import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, IsString, Length, MaxLength, ValidateNested } from 'class-validator';
import { SessionTtlDto, TTL_RULE } from '#libs/agents';
import { OptionalNotNull } from './validators.js';

export const PROJECT_NAME_MAX = 200;
export const PROJECT_DESCRIPTION_MAX = 2000;

export class CreateProjectYuxiDto {
  @ApiPropertyOptional({ type: SessionTtlDto, description: `The TTL of the project's sessions (a session may shorten it, never lengthen it). ${TTL_RULE}` })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => SessionTtlDto)
  ttl?: SessionTtlDto;
}

export class ProjectYuxiDto {
  @ApiProperty({ type: SessionTtlDto, nullable: true, description: 'The TTL of the project\'s sessions; null: none.' }) ttl!: SessionTtlDto | null;
}

export class CreateProjectDto {
  @ApiProperty({ minLength: 1, maxLength: PROJECT_NAME_MAX, example: 'Quarterly reporting' })
  @IsString()
  @Length(1, PROJECT_NAME_MAX)
  name!: string;

  @ApiPropertyOptional({ maxLength: PROJECT_DESCRIPTION_MAX, description: 'Omitted: empty.', example: 'Sessions about the Q3 report share its files.' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(PROJECT_DESCRIPTION_MAX)
  description?: string;

  @ApiPropertyOptional({ type: CreateProjectYuxiDto })
  @OptionalNotNull()
  @IsObject()
  @ValidateNested()
  @Type(() => CreateProjectYuxiDto)
  yuxi?: CreateProjectYuxiDto;
}

export class ProjectDto {
  @ApiProperty({ format: 'uuid', description: 'Pass it as `project_id` when creating a session: the sessions of a project share its workdir.' }) id!: string;
  @ApiProperty({ enum: ['agent.project'] }) object!: 'agent.project';
  @ApiProperty() name!: string;
  @ApiProperty({ description: 'Empty when none was given.' }) description!: string;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) updated_at!: number;
  @ApiProperty({ type: ProjectYuxiDto }) yuxi!: ProjectYuxiDto;
}

export class ProjectListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ProjectDto] }) data!: ProjectDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class ProjectDeletedDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['agent.project'] }) object!: 'agent.project';
  @ApiProperty({ enum: [true] }) deleted!: true;
}
