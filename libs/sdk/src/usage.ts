// Usage reports (`GET /api/v1/agents/usage`, `GET /api/v1/admin/usage`), named from the generated
// types like every other DTO of the SDK (types.ts): none is written by hand.
import type { QueryParams, ResponseBody } from './types.js';

export type UsageReport = ResponseBody<'/api/v1/agents/usage', 'get', 200>;
export type UsageReportRow = UsageReport['data'][number];
export type UsageReportParams = QueryParams<'/api/v1/agents/usage', 'get'>;
export type UsageGroupKey = NonNullable<UsageReportParams['group_by']>;
/** The operators' report across owners: each filter narrows. */
export type AdminUsageReportParams = QueryParams<'/api/v1/admin/usage', 'get'>;
