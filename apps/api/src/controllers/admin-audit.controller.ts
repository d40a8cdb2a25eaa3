import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AuditListDto, AuditLog } from '#libs/audit';
import { assertAdmin, CurrentPrincipal, type Principal } from '#libs/auth';
import { ListQueryDto } from '#libs/protocol';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/v1/admin/audit')
export class AdminAuditController {
  constructor(private readonly audit: AuditLog) {}

  @Get()
  @ApiOperation({ summary: 'The audit trail of administrative actions (administrators only)', description: 'Keys created and revoked, agents created, replaced and deleted; newest first by default.' })
  @ApiOkResponse({ type: AuditListDto })
  @ApiErrors('forbidden', 'invalid_cursor', 'validation_failed', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: ListQueryDto): Promise<AuditListDto> {
    assertAdmin(principal);
    return this.audit.list({ after: query.after, limit: query.limit ?? 50, order: query.order ?? 'desc' });
  }
}
