import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { prepared } from '#libs/database';
import type { UsageTotals } from './usage.types.js';

/** The sums of ledger rows as UsageTotals (one row; cost NULL when no row summed had a price). */
export const LEDGER_TOTALS_COLUMNS = `coalesce(sum(input_tokens), 0) AS input_tokens, coalesce(sum(output_tokens), 0) AS output_tokens,
  coalesce(sum(cached_tokens), 0) AS cached_tokens, coalesce(sum(reasoning_tokens), 0) AS reasoning_tokens,
  coalesce(sum(input_tokens + output_tokens), 0) AS total_tokens, coalesce(sum(model_calls), 0) AS model_calls,
  coalesce(sum(tool_calls), 0) AS tool_calls, sum(cost_microusd) AS cost_microusd`;

/** A totals row as read (bigint sums come back as strings). */
export function totalsFromRow(row: Record<string, unknown> | undefined): UsageTotals {
  const n = (value: unknown): number => Number(value ?? 0);
  return {
    input_tokens: n(row?.input_tokens),
    output_tokens: n(row?.output_tokens),
    cached_tokens: n(row?.cached_tokens),
    reasoning_tokens: n(row?.reasoning_tokens),
    total_tokens: n(row?.total_tokens),
    model_calls: n(row?.model_calls),
    tool_calls: n(row?.tool_calls),
    cost_microusd: row?.cost_microusd === null || row?.cost_microusd === undefined ? null : Number(row.cost_microusd),
  };
}

/**
 * Reads of the usage ledger (its rows are written by the statements that record each step, see
 * ledgerInsertSql): what a session, or a whole tree, has used.
 */
@Injectable()
export class UsageLedgerRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Every row of the session. */
  async sessionTotals(sessionId: string): Promise<UsageTotals> {
    const rows = (await this.dataSource.query(prepared(`SELECT ${LEDGER_TOTALS_COLUMNS} FROM usage_ledger WHERE session_id = $1`), [sessionId])) as Record<string, unknown>[];
    return totalsFromRow(rows[0]);
  }

  /** Every row of the tree under a root (the root's own included). */
  async treeTotals(rootSessionId: string): Promise<UsageTotals> {
    const rows = (await this.dataSource.query(prepared(`SELECT ${LEDGER_TOTALS_COLUMNS} FROM usage_ledger WHERE root_session_id = $1`), [rootSessionId])) as Record<string, unknown>[];
    return totalsFromRow(rows[0]);
  }
}
