import { metrics } from '#libs/metrics';
import { MODEL_USAGE_KINDS, type LedgerRow } from './ledger-sql.js';

/**
 * Counts the model calls of ledger rows a step committed (the values its statement returned: no
 * read of its own): tokens by type and cost, by model and agent. Call it after the commit, so a
 * rolled-back or fenced step counts nothing and a takeover never counts a call twice.
 */
export function countSpend(rows: readonly LedgerRow[] | null | undefined): void {
  for (const row of rows ?? []) {
    if (!MODEL_USAGE_KINDS.includes(row.kind) || !row.model) continue;
    const usage = {
      input_tokens: Number(row.input_tokens),
      output_tokens: Number(row.output_tokens),
      cached_tokens: Number(row.cached_tokens),
      reasoning_tokens: Number(row.reasoning_tokens),
    };
    metrics.modelSpend(row.model, row.agent_id, usage, row.cost_microusd === null ? null : Number(row.cost_microusd));
  }
}
