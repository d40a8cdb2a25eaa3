// What sessions spend: the usage ledger (one row per model call, tool call and sandbox command,
// written in its step's transaction), model prices and the cost they give, and usage reports.
export { type ModelPrice, USAGE_GROUP_KEYS, USAGE_KINDS, type UsageGroupKey, type UsageKind, type UsageTotals } from './usage.types.js';
