import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsIn } from 'class-validator';
import { assertAdmin, CurrentPrincipal, type Principal, USER_KIND_FILTERS, type UserKindFilter, UserListDto, Users } from '#libs/auth';
import { OptionalNotNull } from '#libs/errors';
import { ListQueryDto } from '#libs/protocol';
import { USER_LIST_EXAMPLE } from '../openapi/examples.js';
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
