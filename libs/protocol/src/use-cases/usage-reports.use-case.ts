import { Injectable } from '@nestjs/common';
import { assertOperator, type Principal } from '#libs/auth';
import { parseUsageReport, type UsageReportParams, UsageReportsRepository, type UsageReportScope } from '#libs/usage';
import type { AdminUsageReportQueryDto, UsageReportDto } from '../dto/usage-report.dto.js';

/**
 * The usage a caller may read as their own. The ledger bills an end user's usage to the account of
 * the product user whose app it is, so: a product user reads their account (their own sessions and
 * their apps' end users'); an app-bound key reads its app, narrowed to the end user it acts for when
 * it sends `X-End-User-Id` (without it, the key speaks for the whole app, as its backend does).
 */
export function ownUsageScope(principal: Principal): UsageReportScope {
  if (principal.appId === null) return { accountId: principal.userId };
  const scope: UsageReportScope = { accountId: principal.actorId, appId: principal.appId };
  if (principal.endUser !== null && principal.endUser !== '') scope.endUserId = principal.endUser;
  return scope;
}

@Injectable()
export class UsageReports {
  constructor(private readonly reports: UsageReportsRepository) {}

  /** `GET /api/v1/agents/usage`: the caller's own usage, grouped. */
  own(principal: Principal, params: UsageReportParams): Promise<UsageReportDto> {
    return this.report(ownUsageScope(principal), params);
  }

  /** `GET /api/v1/admin/usage`: every owner's usage, for operators and administrators, narrowed by the filters given. */
  acrossOwners(principal: Principal, query: AdminUsageReportQueryDto): Promise<UsageReportDto> {
    assertOperator(principal);
    return this.report({ accountId: query.account_id, agentId: query.agent_id, projectId: query.project_id, appId: query.app_id }, query);
  }

  private async report(scope: UsageReportScope, params: UsageReportParams): Promise<UsageReportDto> {
    // The clock is read only when a bound is left to its default (a moved usage clock moves it).
    const now = params.to === undefined ? await this.reports.now() : new Date();
    const range = parseUsageReport(params, now);
    const { rows, hasMore } = await this.reports.report(scope, range);
    return { object: 'list', group_by: range.groupBy, from: range.from.toISOString(), to: range.to.toISOString(), data: rows, has_more: hasMore };
  }
}
