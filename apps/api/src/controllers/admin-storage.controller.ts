import { Controller, Get, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { StorageTotalListDto, StorageTotals, StorageTotalsQueryDto } from '#libs/protocol';
import { STORAGE_TOTAL_LIST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

/** What each owner (and each owner's project) stores, for operators: the storage accounting's totals. */
@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/storage')
export class AdminStorageController {
  constructor(private readonly totals: StorageTotals) {}

  @Get()
  @ApiOperation({
    operationId: 'listStorageTotals',
    summary: 'List what each owner stores',
    description:
      'One total per owner (`by=owner`, the default) or per owner\'s project (`by=project`), largest first, in cursor pages (pass the previous page\'s `last_id` as `after`). Each is the sum of its live sessions\' storage (as `GET …/sessions/{id}/storage` counts `total_bytes`; a deleted session leaves it at the accounting\'s next pass, though its rows are stored until it is purged) as the worker last measured it: a session is measured again after its activity, within the storage accounting interval (RETENTION_SWEEP_MS), so a total lags by about that; `measured_at` and `summed_at` show how recent it is. `project_id` filters only with `by=project` (422 `validation_failed` with `by=owner`). Read from the totals alone, never the sessions\' rows. For viewers, operators and administrators (403 `forbidden` otherwise).',
  })
  @ApiOkResponse({ type: StorageTotalListDto, description: 'One page of totals.', example: STORAGE_TOTAL_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'invalid_cursor', 'validation_failed', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: StorageTotalsQueryDto): Promise<StorageTotalListDto> {
    return this.totals.list(principal, { by: query.by ?? 'owner', ownerId: query.owner_id, projectId: query.project_id }, { after: query.after, limit: query.limit ?? 50 });
  }
}
