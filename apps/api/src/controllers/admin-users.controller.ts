import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { assertAdmin, CurrentPrincipal, type Principal, UserListDto, UserListQueryDto, Users } from '#libs/auth';
import { USER_LIST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/users')
export class AdminUsersController {
  constructor(private readonly users: Users) {}

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
}
