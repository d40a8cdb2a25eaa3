// What sessions spend: the usage ledger (one row per model call, tool call and sandbox command,
// written in its step's transaction), model prices and the cost they give, and usage reports.
export { type ModelPrice, USAGE_GROUP_KEYS, USAGE_KINDS, type UsageGroupKey, type UsageKind, type UsageTotals } from './usage.types.js';
export {
  parseInstant,
  parseUsageReport,
  toUsageReportRow,
  USAGE_REPORT_DEFAULT_DAYS,
  USAGE_REPORT_DEFAULT_GROUPS,
  USAGE_REPORT_MAX_DAYS,
  USAGE_REPORT_MAX_GROUPS,
  type UsageReportParams,
  type UsageReportRange,
  type UsageReportRow,
  type UsageReportScope,
} from './reports/usage-report.js';
export { UsageReportsModule } from './reports/usage-reports.module.js';
export { UsageReportsRepository } from './reports/usage-reports.repository.js';
export { addUsageSql, LEDGER_RETURNING, type LedgerEntry, ledgerDeltaSql, ledgerInsertSql, type LedgerRow, MODEL_USAGE_KINDS, TOOL_USAGE_KINDS } from './ledger-sql.js';
export { type CallTokens, modelCallEntry, tokenCount, toolCallEntry, usageTotals } from './usage-totals.js';
export { countSpend } from './spend-metrics.js';
export { ModelPricesRepository, type StoredModelPrice } from './model-prices.repository.js';
export { LEDGER_TOTALS_COLUMNS, totalsFromRow, UsageLedgerRepository } from './usage-ledger.repository.js';
export { UsageModule } from './usage.module.js';
export { MAX_PRICE_PER_MTOK_USD, MODEL_KEY_MAX_LENGTH, MODEL_KEY_PATTERN, modelKeyProblems, parseModelPrice, parseModelPricesFile } from './model-price-input.js';
export { ModelPriceDeletedDto, ModelPriceDto, ModelPriceListDto, PutModelPriceDto } from './model-price.dto.js';
export { ModelPricesFile } from './model-prices-file.js';
