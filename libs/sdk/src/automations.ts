// Automations (`/api/v1/agents/automations`): agents started by a clock, and the record of each
// invocation. Types are named from the generated document like every other DTO (types.ts).
import { paginate } from './paginate.js';
import { type CallOptions, type Query, Transport, type WriteOptions } from './transport.js';
import type { QueryParams, RequestBody, ResponseBody } from './types.js';

const AUTOMATIONS = '/api/v1/agents/automations';
type AutomationsPath = '/api/v1/agents/automations';
type AutomationPath = '/api/v1/agents/automations/{automation_id}';
type InvocationsPath = '/api/v1/agents/automations/{automation_id}/invocations';
type InvocationPath = '/api/v1/agents/automations/{automation_id}/invocations/{invocation_id}';
type PreviewPath = '/api/v1/agents/automation-schedules/preview';

export type Automation = ResponseBody<AutomationPath, 'get', 200>;
export type AutomationList = ResponseBody<AutomationsPath, 'get', 200>;
export type CreateAutomationParams = RequestBody<AutomationsPath, 'post'>;
export type UpdateAutomationParams = RequestBody<AutomationPath, 'post'>;
export type ListAutomationsParams = QueryParams<AutomationsPath, 'get'>;
export type AutomationDeleted = ResponseBody<AutomationPath, 'delete', 200>;
export type AutomationInvocation = ResponseBody<InvocationPath, 'get', 200>;
export type AutomationInvocationList = ResponseBody<InvocationsPath, 'get', 200>;
export type ListAutomationInvocationsParams = QueryParams<InvocationsPath, 'get'>;
export type SchedulePreview = ResponseBody<PreviewPath, 'get', 200>;
export type SchedulePreviewParams = QueryParams<PreviewPath, 'get'>;

/** `/api/v1/agents/automations/{id}/…` with every id encoded. */
function automationPath(automationId: string, ...rest: string[]): string {
  return [AUTOMATIONS, automationId, ...rest].map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join('/');
}

/** A key for one logical write; every retry of it sends the same. */
function newIdempotencyKey(): string {
  return `sdk-${crypto.randomUUID()}`;
}

/**
 * The caller's automations: periodic (a 5- or 6-field cron expression in an IANA time zone) or
 * once (`run_at`), each firing a new session of a saved agent or a message into an existing one.
 * Each scheduled time fires at most once; `invocations` says what each did.
 */
export class AutomationsResource {
  constructor(private readonly transport: Transport) {}

  /** Creates an active automation. A lost answer is retried with the same Idempotency-Key, which returns the same automation. */
  create(params: CreateAutomationParams, options: WriteOptions = {}): Promise<Automation> {
    return this.transport.request({ method: 'POST', path: AUTOMATIONS, body: params, idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(), signal: options.signal });
  }

  list(params: ListAutomationsParams = {}, options: CallOptions = {}): Promise<AutomationList> {
    return this.transport.request({ method: 'GET', path: AUTOMATIONS, query: params as Query, signal: options.signal });
  }

  /** Every automation of the caller, page after page. */
  listAll(params: Omit<ListAutomationsParams, 'after'> = {}, options: CallOptions = {}): AsyncGenerator<Automation> {
    return paginate((after) => this.list({ ...params, after, limit: params.limit ?? 100 }, options));
  }

  get(automationId: string, options: CallOptions = {}): Promise<Automation> {
    return this.transport.request({ method: 'GET', path: automationPath(automationId), signal: options.signal });
  }

  /** Changes the fields given; a new schedule takes effect from now. Safe to repeat. */
  update(automationId: string, params: UpdateAutomationParams, options: CallOptions = {}): Promise<Automation> {
    return this.transport.request({ method: 'POST', path: automationPath(automationId), body: params, signal: options.signal });
  }

  /** Deletes the automation and its invocations (the sessions it started stay). A retry after a lost answer may find it gone (404). */
  delete(automationId: string, options: CallOptions = {}): Promise<AutomationDeleted> {
    return this.transport.request({ method: 'DELETE', path: automationPath(automationId), signal: options.signal });
  }

  /** Stops future fires. Safe to repeat. */
  pause(automationId: string, options: CallOptions = {}): Promise<Automation> {
    return this.transport.request({ method: 'POST', path: automationPath(automationId, 'pause'), signal: options.signal });
  }

  /** Fires again from the next scheduled time after now. Safe to repeat. */
  resume(automationId: string, options: CallOptions = {}): Promise<Automation> {
    return this.transport.request({ method: 'POST', path: automationPath(automationId, 'resume'), signal: options.signal });
  }

  /** Fires once now; the same Idempotency-Key (kept across retries) never fires twice. */
  runNow(automationId: string, options: WriteOptions = {}): Promise<AutomationInvocation> {
    return this.transport.request({ method: 'POST', path: automationPath(automationId, 'invocations'), idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(), signal: options.signal });
  }

  /** The automation's invocations, newest first unless `order: "asc"`. */
  invocations(automationId: string, params: ListAutomationInvocationsParams = {}, options: CallOptions = {}): Promise<AutomationInvocationList> {
    return this.transport.request({ method: 'GET', path: automationPath(automationId, 'invocations'), query: params as Query, signal: options.signal });
  }

  invocation(automationId: string, invocationId: string, options: CallOptions = {}): Promise<AutomationInvocation> {
    return this.transport.request({ method: 'GET', path: automationPath(automationId, 'invocations', invocationId), signal: options.signal });
  }

  /** The next fire times of an expression in a zone (Unix seconds), as the server computes them. */
  preview(params: SchedulePreviewParams, options: CallOptions = {}): Promise<SchedulePreview> {
    return this.transport.request({ method: 'GET', path: '/api/v1/agents/automation-schedules/preview', query: params as Query, signal: options.signal });
  }
}
