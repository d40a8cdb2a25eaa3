import { Body, Controller, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { assertAdmin, CurrentPrincipal, type Principal, SetUserRole, SetUserRoleDto, SuspendUser, USER_KIND_FILTERS, UserDto, type UserKindFilter, UserListDto, Users } from '#libs/auth';
import { OptionalNotNull } from '#libs/errors';
import { ListQueryDto } from '#libs/protocol';
import { USER_EXAMPLE, USER_LIST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

/** The users list's query: the page, as every list's, and the kind. */
export class UserListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: USER_KIND_FILTERS, default: 'user', description: 'Product users (`user`, the default: system users unless others are asked for), app end users (`end_user`), or both (`all`).' })
  @OptionalNotNull()
  @IsIn(USER_KIND_FILTERS)
  kind?: UserKindFilter;
}

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/users')
export class AdminUsersController {
  constructor(
    private readonly users: Users,
    private readonly setUserRole: SetUserRole,
    private readonly suspendUser: SuspendUser,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listUsers',
    summary: 'List users by kind',
    description:
      'The principals resources belong to, newest first by default: product users (`kind=user`, the default), the end users of apps (`kind=end_user`, each with its `app_id`), or both (`kind=all`). `subject` is who the user is outside: a user token\'s `sub` (the `user_subject` a key can be minted for) or an end user\'s `X-End-User-Id`. Administrators only.',
  })
  @ApiOkResponse({ type: UserListDto, description: 'One page of users.', example: USER_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'invalid_cursor', 'validation_failed', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: UserListQueryDto): Promise<UserListDto> {
    assertAdmin(principal);
    return this.users.list(query.kind ?? 'user', { after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }

  @Put(':user_id/role')
  @ApiOperation({
    operationId: 'setUserRole',
    summary: 'Grant or remove a user\'s role',
    description:
      'Makes a product user an `admin`, an `operator` (reads every session and sends control events to it under /api/v1/admin/sessions) or a `viewer` (reads every session there), or removes the role (`null`: the user\'s own resources only). Applies from the user\'s next request on every api replica, and is in the audit trail (`user.role_changed`). An app end user holds no role (422); the bootstrap user stays an administrator (422). Administrators only.',
  })
  @ApiParam({ name: 'user_id', description: 'A product user (the `id` of the users list).', schema: { type: 'string', format: 'uuid' } })
  @ApiBody({ type: SetUserRoleDto, examples: { operator: { summary: 'Make the user an operator', value: { role: 'operator' } }, none: { summary: 'Remove the role', value: { role: null } } } })
  @ApiOkResponse({ type: UserDto, description: 'The user with the role.', example: USER_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'invalid_json', 'rate_limited')
  setRole(@CurrentPrincipal() principal: Principal, @Param('user_id') userId: string, @Body() body: SetUserRoleDto): Promise<UserDto> {
    return this.setUserRole.execute(principal, userId, body.role);
  }

  @Post(':user_id/suspend')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'suspendUser',
    summary: 'Suspend a user',
    description:
      'Refuses every API key and user token of a product user from their next request on, on every api replica (401 `user_suspended`; the answer comes once every replica dropped the user\'s cached keys), and ends their open event streams with a `retry:` hint (the reconnection is refused). Keys bound to an app are the user\'s too, so the app\'s end users are refused with them. Nothing is deleted: sessions, files and keys stay, and `reactivate` makes every unrevoked, unexpired key work again. In the audit trail (`user.suspended`). Suspending a suspended user changes nothing. An app end user (422), the caller themselves (422) and the bootstrap user (422) cannot be suspended. Administrators only.',
  })
  @ApiParam({ name: 'user_id', description: 'A product user (the `id` of the users list).', schema: { type: 'string', format: 'uuid' } })
  @ApiOkResponse({ type: UserDto, description: 'The user, with `suspended_at` set.', example: { ...USER_EXAMPLE, suspended_at: USER_EXAMPLE.created_at } })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'rate_limited')
  suspend(@CurrentPrincipal() principal: Principal, @Param('user_id') userId: string): Promise<UserDto> {
    return this.suspendUser.execute(principal, userId, true);
  }

  @Post(':user_id/reactivate')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'reactivateUser',
    summary: 'Reactivate a suspended user',
    description:
      'Ends a suspension: the user\'s unrevoked, unexpired keys and their user tokens work again from the next request. In the audit trail (`user.reactivated`). Reactivating an active user changes nothing. Administrators only.',
  })
  @ApiParam({ name: 'user_id', description: 'A product user (the `id` of the users list).', schema: { type: 'string', format: 'uuid' } })
  @ApiOkResponse({ type: UserDto, description: 'The user, with `suspended_at` null.', example: USER_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'rate_limited')
  reactivate(@CurrentPrincipal() principal: Principal, @Param('user_id') userId: string): Promise<UserDto> {
    return this.suspendUser.execute(principal, userId, false);
  }
}
