import { DomainError, type FieldError } from '#libs/errors';
import { USAGE_GROUP_KEYS, type UsageGroupKey } from '../usage.types.js';

/** The longest range one report covers: a year of days (a leap year's included). */
export const USAGE_REPORT_MAX_DAYS = 366;
/** The range when `from` is not given: the 30 UTC days ending with the day of `to`. */
export const USAGE_REPORT_DEFAULT_DAYS = 30;
/** Groups one report answers at most (`limit`); a day report of the longest range fits in the default. */
export const USAGE_REPORT_MAX_GROUPS = 1000;
export const USAGE_REPORT_DEFAULT_GROUPS = 400;

const DAY_MS = 86_400_000;
// A calendar date, or a date-time with an optional fraction and an optional offset (none: UTC).
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?$/;

/** Which ledger rows a report sums: every given key narrows (the caller's scope and an operator's filters). */
export interface UsageReportScope {
  accountId?: string;
  appId?: string;
  endUserId?: string;
  agentId?: string;
  projectId?: string;
}

/** A report's parameters once checked: a half-open range [from, to) of at most a year, a group key, a group cap. */
export interface UsageReportRange {
  from: Date;
  to: Date;
  groupBy: UsageGroupKey;
  limit: number;
}

/** The parameters as a client sends them (query strings). */
export interface UsageReportParams {
  from?: string;
  to?: string;
  group_by?: string;
  limit?: number;
}

/** One group's sums, as the report shows it. */
export interface UsageReportRow {
  /** The day (`YYYY-MM-DD`, UTC) or the id grouped by; null for rows without one (a tool call has no model, a session no project). */
  key: string | null;
  /** The app of an end user (grouped by `end_user` only: one external id may be an end user of two apps). */
  app_id?: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens: number;
  model_calls: number;
  tool_calls: number;
  cost_microusd: number | null;
}

/** A row as Postgres returns it: sums of bigint columns come back as strings. */
export interface UsageReportDbRow {
  key: string | null;
  app_id?: string | null;
  input_tokens: string | number;
  output_tokens: string | number;
  cached_tokens: string | number;
  reasoning_tokens: string | number;
  model_calls: string | number;
  tool_calls: string | number;
  cost_microusd: string | number | null;
}

type Parsed = { at: Date; dateOnly: boolean } | { error: string };

/** An ISO 8601 date (`2026-12-05`) or date-time (`2026-12-05T10:00:00Z`, offset optional: UTC). */
export function parseInstant(value: string): Parsed {
  const date = DATE.exec(value);
  const time = date ? null : DATE_TIME.exec(value);
  const parts = date ?? time;
  if (!parts) return { error: 'must be an ISO 8601 date (YYYY-MM-DD) or date-time (YYYY-MM-DDThh:mm[:ss][Z|±hh:mm])' };
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const at = date ? new Date(Date.UTC(year, month - 1, day)) : new Date(time![8] ? value : `${value}Z`);
  // Date.UTC rolls 2026-02-30 over to March; a real date reads back as written.
  const valid = !Number.isNaN(at.getTime()) && (!date || (at.getUTCFullYear() === year && at.getUTCMonth() === month - 1 && at.getUTCDate() === day));
  if (!valid || year < 1970 || year > 9999) return { error: 'is not a valid date between 1970 and 9999' };
  if (time && (Number(time[4]) > 23 || Number(time[5]) > 59 || Number(time[6] ?? 0) > 59)) return { error: 'has an invalid time of day' };
  return { at, dateOnly: date !== null };
}

function startOfUtcDay(at: Date): Date {
  return new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);
}

/**
 * Checks a report's parameters against `now` (the usage clock). `from` is inclusive; a date-time
 * `to` is exclusive and a date `to` takes in that whole day. Defaults: `to` now, `from` the start of
 * the UTC day 29 days before `to`'s (30 days), `group_by` day. Every problem is a 422 naming its field.
 */
export function parseUsageReport(params: UsageReportParams, now: Date): UsageReportRange {
  const errors: FieldError[] = [];
  const groupBy = params.group_by ?? 'day';
  if (!(USAGE_GROUP_KEYS as readonly string[]).includes(groupBy)) errors.push({ field: 'group_by', errors: [`must be one of ${USAGE_GROUP_KEYS.join(', ')}`] });
  const limit = params.limit ?? USAGE_REPORT_DEFAULT_GROUPS;
  if (!Number.isInteger(limit) || limit < 1 || limit > USAGE_REPORT_MAX_GROUPS) errors.push({ field: 'limit', errors: [`must be an integer 1–${USAGE_REPORT_MAX_GROUPS}`] });

  const read = (field: 'from' | 'to'): Parsed | undefined => {
    const value = params[field];
    if (value === undefined) return undefined;
    const parsed = parseInstant(value);
    if ('error' in parsed) errors.push({ field, errors: [`${field} ${parsed.error}`] });
    return parsed;
  };
  const fromIn = read('from');
  const toIn = read('to');
  if (errors.length > 0) throw DomainError.validation(errors);

  const to = toIn && 'at' in toIn ? (toIn.dateOnly ? new Date(toIn.at.getTime() + DAY_MS) : toIn.at) : now;
  const from = fromIn && 'at' in fromIn ? fromIn.at : new Date(startOfUtcDay(new Date(to.getTime() - 1)).getTime() - (USAGE_REPORT_DEFAULT_DAYS - 1) * DAY_MS);
  if (from.getTime() >= to.getTime()) throw DomainError.validation([{ field: 'from', errors: ['from must be before to'] }]);
  if (to.getTime() - from.getTime() > USAGE_REPORT_MAX_DAYS * DAY_MS) throw DomainError.validation([{ field: 'to', errors: [`the range from..to must be at most ${USAGE_REPORT_MAX_DAYS} days`] }]);
  return { from, to, groupBy: groupBy as UsageGroupKey, limit };
}

/** The ledger column (or expression) each group key groups by; day groups on the UTC day of `at`. */
export const GROUP_COLUMNS: Record<UsageGroupKey, string> = {
  day: `to_char(date_trunc('day', at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
  agent: 'agent_id',
  model: 'model',
  session: 'session_id',
  project: 'project_id',
  app: 'app_id',
  end_user: 'end_user_id',
};

function count(value: string | number): number {
  return typeof value === 'number' ? value : Number(value);
}

/** A database row as the report shows it: counts as numbers (the key is already text: ids, or a day as `YYYY-MM-DD`). */
export function toUsageReportRow(groupBy: UsageGroupKey, row: UsageReportDbRow): UsageReportRow {
  return {
    key: row.key,
    ...(groupBy === 'end_user' ? { app_id: row.app_id ?? null } : {}),
    input_tokens: count(row.input_tokens),
    output_tokens: count(row.output_tokens),
    cached_tokens: count(row.cached_tokens),
    reasoning_tokens: count(row.reasoning_tokens),
    model_calls: count(row.model_calls),
    tool_calls: count(row.tool_calls),
    cost_microusd: row.cost_microusd === null ? null : count(row.cost_microusd),
  };
}
