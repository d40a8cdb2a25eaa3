import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CallerDto, callerDto, CurrentPrincipal, type Principal } from '#libs/auth';
import { CALLER_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.caller.name)
@ApiBearerAuth()
@Controller('api/v1/me')
export class MeController {
  @Get()
  @ApiOperation({
    operationId: 'getCaller',
    summary: 'Who am I',
    description: 'The caller as the server sees the credential: its user, key, access level, app and role. Any valid credential; the console uses it to show the pages the role may use.',
  })
  @ApiOkResponse({ type: CallerDto, description: 'The caller.', example: CALLER_EXAMPLE })
  @ApiErrors()
  get(@CurrentPrincipal() principal: Principal): CallerDto {
    return callerDto(principal);
  }
}
