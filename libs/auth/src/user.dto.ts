import { ApiProperty } from '@nestjs/swagger';
import { IsDefined, IsIn, ValidateIf } from 'class-validator';
import { ROLES, type Role } from './principal.js';

export const USER_KINDS = ['user', 'end_user'] as const;
export type UserKind = (typeof USER_KINDS)[number];
/** What the users list shows: one kind, or every kind (`all`). */
export const USER_KIND_FILTERS = [...USER_KINDS, 'all'] as const;
export type UserKindFilter = (typeof USER_KIND_FILTERS)[number];

/** A principal resources belong to, as administrators see it. */
export class UserDto {
  @ApiProperty({ format: 'uuid', description: 'The user id: what `user_id` of an API key names, and what owns sessions and files.' }) id!: string;
  @ApiProperty({ enum: ['user'] }) object!: 'user';
  @ApiProperty({ enum: USER_KINDS, description: '`user`: a product user (user tokens, API keys); `end_user`: an end user of an app, acting through the app\'s bound key.' })
  kind!: UserKind;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'Who the user is outside this server. A product user: the `sub` of their user tokens, also what `user_subject` of an API key names (null for a user known by id only). An end user: their `X-End-User-Id` within the app (`""` for the app\'s default end user).',
    example: 'alice',
  })
  subject!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'End users: the app they belong to (the `app_id` of the key they act through); null for product users.', example: null })
  app_id!: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'End users: the product user who owns the app-bound key; null for product users.' })
  parent_id!: string | null;
  @ApiProperty({
    type: String,
    enum: [...ROLES, null],
    nullable: true,
    description: '`admin`: everything; `operator`: reads every session and acts on it (control events) under /api/v1/admin; `viewer`: reads every session there; null: a product user without a role (their own resources only), and every end user.',
  })
  role!: Role | null;
  @ApiProperty({ description: '`role` is `admin`: a deployment administrator (never an end user).' }) is_admin!: boolean;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds since an administrator suspended the user (every key and token of theirs is refused with 401 `user_suspended`); null: active.' })
  suspended_at!: number | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
}

export class UserListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [UserDto] }) data!: UserDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

/** `PUT /api/v1/admin/users/{user_id}/role`. */
export class SetUserRoleDto {
  @ApiProperty({ type: String, enum: [...ROLES, null], nullable: true, description: 'The role to hold from the next request on; null removes it.', example: 'operator' })
  // Required, and null is a value here (it removes the role), unlike the optional fields elsewhere.
  @IsDefined()
  @ValidateIf((dto: SetUserRoleDto) => dto.role !== null)
  @IsIn(ROLES)
  role!: Role | null;
}
