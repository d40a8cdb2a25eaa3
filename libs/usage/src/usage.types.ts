/**
 * The units a session spends, as every resource shows them (`yuxi.usage` of runs, turns, sessions
 * and a tree's state) and as reports and budgets sum them from the ledger.
 */
export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
  model_calls: number;
  tool_calls: number;
  /** Integer micro-dollars at the deployment's prices; null when none of the model calls summed had a price. */
  cost_microusd: number | null;
}

/** What one ledger row records: a model call (of a turn, a compaction, an MCP sampling request), a tool call or a sandbox command. */
export const USAGE_KINDS = ['model_call', 'compaction', 'sampling', 'tool_call', 'command'] as const;
export type UsageKind = (typeof USAGE_KINDS)[number];

/** A model's price (USD per million tokens); cached input and reasoning fall back to input and output when unset. */
export interface ModelPrice {
  model: string;
  input_per_mtok_usd: number;
  output_per_mtok_usd: number;
  cached_input_per_mtok_usd: number | null;
  reasoning_per_mtok_usd: number | null;
}

/** The keys a usage report groups by (`group_by`). */
export const USAGE_GROUP_KEYS = ['day', 'agent', 'model', 'session', 'project', 'app', 'end_user'] as const;
export type UsageGroupKey = (typeof USAGE_GROUP_KEYS)[number];
