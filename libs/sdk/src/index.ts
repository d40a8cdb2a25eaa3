/**
 * The TypeScript SDK of the Agents Public API: types generated from the OpenAPI document
 * (`generated/schema.ts`, by `npm run sdk:generate`) and a small hand-written layer for what a
 * generator does not do: idempotency keys with safe retries, receipt lookup after a lost answer,
 * and a session event iterator that follows the recovery rules of the API. No framework imports:
 * it runs wherever `fetch` does.
 */
export { AdminResource, AdminSessionsResource } from './admin.js';
export { AutomationsResource } from './automations.js';
export type { Automation, AutomationDeleted, AutomationInvocation, AutomationInvocationList, AutomationList, CreateAutomationParams, ListAutomationInvocationsParams, ListAutomationsParams, SchedulePreview, SchedulePreviewParams, UpdateAutomationParams } from './automations.js';
export { AgentsClient, AgentsResource, paginate, ProjectsResource, SessionsResource, WebhooksResource } from './client.js';
export type { CancelTarget, ResumeParams, SendMessageOptions, ToolResultParams, UpdateOptions } from './client.js';
export { AgentsApiError, AgentsConnectionError, AgentsProtocolError } from './errors.js';
export { DEFAULT_RETRY } from './retry.js';
export type { RetryPolicy } from './retry.js';
export { SessionEventStream } from './session-events.js';
export type { ResyncSnapshot, SessionEventsOptions, StreamEnd } from './session-events.js';
export { parseSse, SseLineParser } from './sse-parser.js';
export type { SseMessage, SseRecord } from './sse-parser.js';
export type { OtlpAnyValue, OtlpKeyValue, OtlpResourceSpans, OtlpScopeSpans, OtlpSpan, OtlpSpanEvent, OtlpSpanLink, OtlpTraceData } from './traces.js';
export type { CallOptions, ClientOptions, WriteOptions } from './transport.js';
export type * from './types.js';
export type { AdminUsageReportParams, UsageGroupKey, UsageReport, UsageReportParams, UsageReportRow } from './usage.js';
export { verifyWebhook, WebhookVerificationError } from './webhooks.js';
export type { VerifyWebhookOptions, WebhookHeaders, WebhookVerificationReason } from './webhooks.js';
