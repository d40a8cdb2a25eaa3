import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsString, IsUUID, Length, Max, Min } from 'class-validator';
import { SESSION_STATUSES } from '#libs/engine';
import { ListQueryDto, SessionDto, SessionYuxiDto } from './session.dto.js';
import { OptionalNotNull } from './validators.js';

/** The largest Unix time a filter takes (year 5138): beyond it a Date is invalid, and Postgres would refuse it with a 500. */
export const MAX_UNIX_SECONDS = 1e11;

/** The operators' session search (`GET /api/v1/admin/sessions`): every filter narrows. */
export class AdminSessionListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: SESSION_STATUSES, description: 'The session\'s `status`, as the session resource shows it.' })
  @OptionalNotNull()
  @IsIn(SESSION_STATUSES)
  status?: (typeof SESSION_STATUSES)[number];
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'Sessions of this agent.' }) @OptionalNotNull() @IsString() @Length(1, 64) agent_id?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Sessions of this owner (a user id of the users list: a product user or an end user).' })
  @OptionalNotNull()
  @IsUUID()
  owner_id?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 128, description: 'Sessions of this app\'s end users.' }) @OptionalNotNull() @IsString() @Length(1, 128) app_id?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 128, description: 'Sessions of the end user with this `X-End-User-Id` (in any app, or in `app_id` when given).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 128)
  end_user_id?: string;
  // Exactly `true` or `false`, as every boolean query parameter.
  @ApiPropertyOptional({ enum: ['true', 'false'], description: '`true`: the latest turn waits for a person (an open question, approval or client tool call, or a budget without room to raise and approve); `false`: it does not.' })
  @OptionalNotNull()
  @IsIn(['true', 'false'])
  waiting?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'The latest turn failed with this error code (e.g. `model_error`).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  error_code?: string;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Unix seconds: created at or after.' }) @OptionalNotNull() @Type(() => Number) @IsInt() @Min(0) @Max(MAX_UNIX_SECONDS) created_after?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'Unix seconds: created before.' }) @OptionalNotNull() @Type(() => Number) @IsInt() @Min(0) @Max(MAX_UNIX_SECONDS) created_before?: number;
  @ApiPropertyOptional({ minLength: 1, maxLength: 200, description: 'Search: the title contains it (case-insensitive), or the session id starts with it.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 200)
  q?: string;
}

export class SessionOwnerDto {
  @ApiProperty({ enum: ['user', 'end_user'], description: '`user`: a product user; `end_user`: an end user of an app.' }) kind!: 'user' | 'end_user';
  @ApiProperty({ type: String, nullable: true, description: 'A product user\'s token `sub`, or an end user\'s `X-End-User-Id` within the app.' }) subject!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'An end user\'s app; null for product users.' }) app_id!: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The user\'s name on this server, for people to read: `bootstrap` for the administrator of BOOTSTRAP_API_KEY, the name given to `create-key`; null for a user known only by id or by `subject` (first seen through a key made for their id, or a token) and for end users.',
    example: 'bootstrap',
  })
  name!: string | null;
}

export class AdminSessionYuxiDto extends SessionYuxiDto {
  @ApiProperty({ format: 'uuid', description: 'Who owns the session (a user id of the users list).' }) owner_id!: string;
  @ApiProperty({ type: SessionOwnerDto }) owner!: SessionOwnerDto;
}

/** The session resource as operators see it: with its owner. */
export class AdminSessionDto extends SessionDto {
  @ApiProperty({ type: AdminSessionYuxiDto }) override yuxi!: AdminSessionYuxiDto;
}

export class AdminSessionListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AdminSessionDto] }) data!: AdminSessionDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
