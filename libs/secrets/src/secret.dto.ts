import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsString, Length, Matches } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';

/** What a secret's name may be: what an agent's `auth.secret` names. */
export const SECRET_NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const MAX_SECRET_BYTES = 16 * 1024;
/** `own`: the caller's (a private agent's auth resolves in its owner's); `shared`: the deployment's, for public agents (administrators). */
export const SECRET_SCOPES = ['own', 'shared'] as const;
export type SecretScopeName = (typeof SECRET_SCOPES)[number];

export class PutSecretDto {
  @ApiProperty({
    minLength: 1,
    maxLength: MAX_SECRET_BYTES,
    description:
      'The value: a bearer token (`auth.type: bearer`), or an OAuth client secret (`oauth_client_credentials`). Write-only: no response and no read ever returns it. Single line.',
    example: 'ghp_exampletoken',
  })
  @IsString()
  @Length(1, MAX_SECRET_BYTES)
  @Matches(/^[^\r\n\0]*$/, { message: 'value must be a single line' })
  value!: string;
}

export class SecretScopeQueryDto {
  @ApiPropertyOptional({ enum: SECRET_SCOPES, default: 'own', description: '`own` (default): the caller\'s secrets, which their private agents reference; `shared`: the deployment\'s, which public agents reference (administrators only).' })
  @OptionalNotNull()
  @IsIn(SECRET_SCOPES)
  scope?: SecretScopeName;
}

export class SecretDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['secret'] }) object!: 'secret';
  @ApiProperty({ pattern: SECRET_NAME_PATTERN.source, description: 'What an MCP tool\'s `auth.secret` names.' }) name!: string;
  @ApiProperty({ enum: SECRET_SCOPES }) scope!: SecretScopeName;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The owning user; null for a shared secret.' }) owner_id!: string | null;
  @ApiProperty({ type: 'integer', minimum: 1, description: 'One more at each replacement (rotation).' }) version!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds of the last replacement.' }) updated_at!: number;
}

export class SecretListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [SecretDto] }) data!: SecretDto[];
}

export class SecretDeletedDto {
  @ApiProperty() name!: string;
  @ApiProperty({ enum: ['secret.deleted'] }) object!: 'secret.deleted';
  @ApiProperty({ enum: [true] }) deleted!: true;
}
