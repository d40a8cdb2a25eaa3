/** What one group of a usage report summed (`GET /api/v1/agents/usage`, `GET /api/v1/admin/usage`). */
export interface UsageReportRow {
  /** A UTC day `YYYY-MM-DD`, or the id grouped by; null for usage without one (tool calls have no model). */
  key: string | null;
  /** Grouped by `end_user` only: the end user's app. */
  app_id?: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  model_calls: number;
  tool_calls: number;
  /** Integer micro-dollars at the price in force at each call; null when no model call of the group had a price. */
  cost_microusd: number | null;
}

export type UsageGroupKey = 'day' | 'agent' | 'model' | 'session' | 'project' | 'app' | 'end_user';

export interface UsageReport {
  object: 'list';
  group_by: UsageGroupKey;
  /** The range summed, ISO 8601: `from` inclusive, `to` exclusive. */
  from: string;
  to: string;
  /** Days oldest first; every other key the most spent first. */
  data: UsageReportRow[];
  has_more: boolean;
}

export interface UsageReportParams {
  group_by?: UsageGroupKey;
  /** ISO 8601 date or date-time, UTC; a date `to` takes in its whole day. At most 366 days. */
  from?: string;
  to?: string;
  /** The most groups answered (1–1000, default 400). */
  limit?: number;
}

/** The operators' report across owners: each filter narrows. */
export interface AdminUsageReportParams extends UsageReportParams {
  account_id?: string;
  agent_id?: string;
  project_id?: string;
  app_id?: string;
}
