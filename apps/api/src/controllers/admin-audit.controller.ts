import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuditListDto, AuditLog } from '#libs/audit';
import { assertAdmin, CurrentPrincipal, type Principal } from '#libs/auth';
import { ListQueryDto } from '#libs/protocol';
import { AUDIT_LIST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/audit')
export class AdminAuditController {
  constructor(private readonly audit: AuditLog) {}

  @Get()
  @ApiOperation({
    operationId: 'listAuditEntries',
    summary: 'List the audit trail',
    description: 'Administrative actions: keys created and revoked, agents created, replaced and deleted; newest first by default. Administrators only.',
  })
  @ApiOkResponse({ type: AuditListDto, description: 'One page of audit entries.', example: AUDIT_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'invalid_cursor', 'validation_failed', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: ListQueryDto): Promise<AuditListDto> {
    assertAdmin(principal);
    return this.audit.list({ after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }
}
