import { ApiProperty } from '@nestjs/swagger';
import { ACCESS_LEVELS, type AccessLevel, type Principal, type Role, ROLES } from './principal.js';

/**
 * `GET /api/v1/me`: who the credential is, so a client (the console) can show what it may do
 * instead of probing routes for 403s. Never a secret.
 */
export class CallerDto {
  @ApiProperty({ enum: ['caller'] }) object!: 'caller';
  @ApiProperty({ format: 'uuid', description: 'The user the caller\'s resources belong to: the product user, or the app\'s end user acting through an app-bound key.' }) user_id!: string;
  @ApiProperty({ format: 'uuid', description: 'The product user behind the credential (the key\'s owner or the token\'s subject); equals `user_id` unless an end user acts.' }) actor_id!: string;
  @ApiProperty({ enum: ['user', 'end_user'], description: '`end_user` when an app-bound key acts for an end user.' }) kind!: 'user' | 'end_user';
  @ApiProperty({ type: String, nullable: true, description: 'The API key used; null for a user token.' }) key_id!: string | null;
  @ApiProperty({ enum: ACCESS_LEVELS, description: 'The credential\'s access level: `full`, or `agents` (sessions and files only).' }) access!: AccessLevel;
  @ApiProperty({ type: String, nullable: true, description: 'The app of an app-bound key.' }) app_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The acting end user\'s id within the app (`""` for the default end user); null when not acting for an app.' }) end_user_id!: string | null;
  @ApiProperty({ type: String, enum: [...ROLES, null], nullable: true, description: 'The product user\'s role (null: none). The admin routes also need a full-access credential not bound to an app.' }) role!: Role | null;
}

export function callerDto(principal: Principal): CallerDto {
  return {
    object: 'caller',
    user_id: principal.userId,
    actor_id: principal.actorId,
    kind: principal.endUser === null ? 'user' : 'end_user',
    key_id: principal.keyId,
    access: principal.access,
    app_id: principal.appId,
    end_user_id: principal.endUser,
    role: principal.role,
  };
}
