import { Body, Controller, Get, Param, Put, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { assertAdmin, CurrentPrincipal, type Principal, SetUserRole, SetUserRoleDto, USER_KIND_FILTERS, UserDto, type UserKindFilter, UserListDto, Users } from '#libs/auth';
import { OptionalNotNull } from '#libs/errors';
import { ListQueryDto } from '#libs/protocol';
import { USER_EXAMPLE, USER_LIST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

/** The users list's query: the page, as every list's, and the kind. */
export class UserListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: USER_KIND_FILTERS, default: 'user', description: 'Product users (`user`, the default: 001 lists system users unless asked), app end users (`end_user`), or both (`all`).' })
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
}
