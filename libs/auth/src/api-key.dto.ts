import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDate, IsIn, IsInt, IsString, IsUUID, Length, Matches, Max, Min } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';

export class CreateApiKeyDto {
  @ApiProperty({ minLength: 1, maxLength: 200 }) @IsString() @Length(1, 200) name!: string;
  @ApiProperty({ enum: ['full', 'agents'], description: '`agents`: the public agents API only (admin routes answer 403).' })
  @IsIn(['full', 'agents'])
  access!: 'full' | 'agents';
  @ApiPropertyOptional({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._:-]+$', description: 'Binds the key to an app: its callers act as the app\'s end users (X-End-User-Id).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 128)
  @Matches(/^[A-Za-z0-9._:-]+$/)
  app_id?: string;
  @ApiPropertyOptional({
    format: 'uuid',
    description: 'Owner of the key, by the server\'s user id; another user than the caller is for administrators only (created on first use). Give `user_id` or `user_subject`, not both; neither: the caller.',
  })
  @OptionalNotNull()
  @IsUUID()
  user_id?: string;
  @ApiPropertyOptional({
    minLength: 1,
    maxLength: 255,
    description:
      'Owner of the key, by the subject its user tokens carry (`sub`): the key and those tokens act as one user and see the same sessions. The same value as `subject` in the users list. Another user than the caller is for administrators only (created on first use). Give `user_id` or `user_subject`, not both.',
    example: 'alice',
  })
  @OptionalNotNull()
  @IsString()
  @Length(1, 255)
  user_subject?: string;
  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    description:
      'When the key stops working; omitted: never. A key created with a user token (JWT) expires within USER_TOKEN_KEY_MAX_TTL_S (default 30 days) whatever is asked: a later or omitted `expires_at` is brought to that bound (the answer\'s `expires_at` says which).',
  })
  @OptionalNotNull() @Type(() => Date) @IsDate() expires_at?: Date;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1000000, description: 'Requests per minute (default RATE_LIMIT_PER_MINUTE).' })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  rate_limit_per_minute?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 10000, description: 'Concurrent SSE streams per principal (default MAX_STREAMS_PER_PRINCIPAL).' })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(10_000)
  max_streams?: number;
}

export class ApiKeyDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['api_key'] }) object!: 'api_key';
  @ApiProperty() name!: string;
  @ApiProperty({ enum: ['full', 'agents'] }) access!: string;
  @ApiProperty({ type: String, nullable: true }) app_id!: string | null;
  @ApiProperty() user_id!: string;
  @ApiProperty({ description: 'The first characters of the secret, to recognise it.' }) prefix!: string;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Requests per minute; null: the deployment default.' }) rate_limit_per_minute!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Concurrent SSE streams; null: the deployment default.' }) max_streams!: number | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds; null: never expires.' }) expires_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds.' }) last_used_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds.' }) revoked_at!: number | null;
}

export class ApiKeyCreatedDto extends ApiKeyDto {
  @ApiProperty({ description: 'The secret, shown this once: `yuxi_` + 36 base62 characters + a 6-character checksum.' }) secret!: string;
}

export class ApiKeyListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ApiKeyDto] }) data!: ApiKeyDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class ApiKeyDeletedDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['api_key.deleted'] }) object!: 'api_key.deleted';
  @ApiProperty({ enum: [true] }) deleted!: true;
}
