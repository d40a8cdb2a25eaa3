import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { prepared } from '#libs/database';
import type { UsageGroupKey } from '../usage.types.js';
import { GROUP_COLUMNS, toUsageReportRow, type UsageReportDbRow, type UsageReportRange, type UsageReportRow, type UsageReportScope } from './usage-report.js';

/** One statement text per group key (seven prepared plans): the scope's unset keys are NULL parameters. */
function reportSql(groupBy: UsageGroupKey): string {
  const key = GROUP_COLUMNS[groupBy];
  // One external id may be an end user of two apps: they are two groups.
  const appColumn = groupBy === 'end_user' ? ', app_id' : '';
  // Days read as a series, oldest first; every other key as a ranking, the most spent first.
  const order = groupBy === 'day' ? 'key ASC' : 'cost DESC NULLS LAST, input + output DESC, key ASC NULLS LAST';
  return `SELECT key${appColumn}, input::text AS input_tokens, output::text AS output_tokens, cached::text AS cached_tokens,
      reasoning::text AS reasoning_tokens, model_calls::text AS model_calls, tool_calls::text AS tool_calls, cost::text AS cost_microusd
    FROM (
      SELECT ${key} AS key${appColumn}, sum(input_tokens) AS input, sum(output_tokens) AS output, sum(cached_tokens) AS cached,
        sum(reasoning_tokens) AS reasoning, sum(model_calls) AS model_calls, sum(tool_calls) AS tool_calls, sum(cost_microusd) AS cost
      FROM usage_ledger
      WHERE at >= $1 AND at < $2
        AND ($3::uuid IS NULL OR account_id = $3::uuid)
        AND ($4::varchar IS NULL OR app_id = $4::varchar)
        AND ($5::varchar IS NULL OR end_user_id = $5::varchar)
        AND ($6::varchar IS NULL OR agent_id = $6::varchar)
        AND ($7::varchar IS NULL OR project_id = $7::varchar)
      GROUP BY ${key}${appColumn}) groups
    ORDER BY ${order}
    LIMIT $8`;
}

/**
 * Usage reports: the ledger's rows in a range, summed per group. One pass over the rows in range
 * (an index on (account_id, at) or (at) finds them), hashed by key; `sum` skips the NULL cost of
 * unpriced rows, so a group's cost is NULL only when none of its rows had a price.
 */
@Injectable()
export class UsageReportsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The usage clock's now: report ranges default to it, as the ledger's `at` does. */
  async now(): Promise<Date> {
    const rows = (await this.dataSource.query(prepared(`SELECT usage_now() AS now`))) as { now: Date }[];
    return rows[0]!.now;
  }

  /** The groups in order, at most `range.limit`; `hasMore` when more groups had rows. */
  async report(scope: UsageReportScope, range: UsageReportRange): Promise<{ rows: UsageReportRow[]; hasMore: boolean }> {
    const rows = (await this.dataSource.query(prepared(reportSql(range.groupBy)), [
      range.from,
      range.to,
      scope.accountId ?? null,
      scope.appId ?? null,
      scope.endUserId ?? null,
      scope.agentId ?? null,
      scope.projectId ?? null,
      range.limit + 1,
    ])) as UsageReportDbRow[];
    return { rows: rows.slice(0, range.limit).map((row) => toUsageReportRow(range.groupBy, row)), hasMore: rows.length > range.limit };
  }
}
