import { AgentsApiError, AgentsProtocolError, type ErrorBody } from '#libs/sdk';
import { storedCredential } from '../credentials.js';

// The automations API as the console calls it. The SDK's types are generated from the OpenAPI
// document and learn these shapes when it is regenerated; until then the console reads them through
// the narrow types below and calls the routes with the same key the SDK client sends.

export type AutomationStatus = 'active' | 'paused' | 'completed';
export type OverlapPolicy = 'skip' | 'queue' | 'cancel_previous';
export type CatchUpPolicy = 'none' | 'latest' | 'all';
export type InvocationStatus = 'queued' | 'completed' | 'failed' | 'skipped';

export const OVERLAP_POLICIES: OverlapPolicy[] = ['skip', 'queue', 'cancel_previous'];
export const CATCH_UP_POLICIES: CatchUpPolicy[] = ['none', 'latest', 'all'];

/** A user message as the upstream `input` sends it. */
export interface InputMessage {
  type?: 'message';
  role: 'user';
  content: { type: string; text?: string }[];
}

export type AutomationTarget =
  | { type: 'new_session'; agent_id: string; environment?: Record<string, unknown>; input: InputMessage[]; metadata?: Record<string, string> }
  | { type: 'existing_session'; session_id: string; instructions: string };

/** `agent.automation`. */
export interface Automation {
  id: string;
  object: 'agent.automation';
  name: string;
  type: 'periodic' | 'once';
  expression?: string | null;
  timezone?: string | null;
  /** Unix seconds (once only). */
  run_at?: number | null;
  status: AutomationStatus;
  pause_reason: string | null;
  target: AutomationTarget;
  created_at: number;
  metadata: Record<string, string>;
  yuxi: { overlap: OverlapPolicy; catch_up: CatchUpPolicy; next_run_at: number | null };
}

/** `agent.automation.invocation`. */
export interface Invocation {
  id: string;
  object: 'agent.automation.invocation';
  automation_id: string;
  created_at: number;
  scheduled_at: number | null;
  session_id: string | null;
  status: InvocationStatus;
  skip_reason: string | null;
  error: { code: string; message: string } | null;
  source: { type: 'automation' | 'manual' };
  yuxi: { input_id: string | null; turn_id: string | null; reason: string; fired_at: number | null };
}

export interface Page<T> {
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export type NewAutomation =
  | { name: string; type: 'periodic'; expression: string; timezone: string; target: AutomationTarget; yuxi: { overlap: OverlapPolicy; catch_up: CatchUpPolicy } }
  | { name: string; type: 'once'; run_at: number; target: AutomationTarget; yuxi: { overlap: OverlapPolicy; catch_up: CatchUpPolicy } };

export interface SchedulePreview {
  expression: string;
  timezone: string;
  next_run_times: number[];
}

const BASE = '/api/v1/agents';
const automationPath = (id: string, ...rest: string[]) => [`${BASE}/automations/${encodeURIComponent(id)}`, ...rest.map(encodeURIComponent)].join('/');

interface Call {
  method?: 'GET' | 'POST' | 'DELETE';
  body?: unknown;
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** A call signed with the console's credential, its failure as the SDK's errors (so `problem` and `fieldErrors` read it). */
async function request<T>(path: string, { method = 'GET', body, idempotencyKey, signal }: Call = {}): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${storedCredential() ?? ''}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  const response = await fetch(new URL(path, window.location.origin), { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (response.ok) return parsed as T;
  const error = (parsed as Partial<ErrorBody> | undefined)?.error;
  if (error && typeof error.code === 'string') throw new AgentsApiError(response.status, error, { requestId: response.headers.get('x-request-id') });
  throw new AgentsProtocolError(`HTTP ${response.status} without an API error body`, response.status, text.slice(0, 2_000));
}

const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== '') search.set(name, String(value));
  return search.size > 0 ? `?${search}` : '';
};

export const automations = {
  list: (after: string, signal?: AbortSignal) => request<Page<Automation>>(`${BASE}/automations${query({ limit: 50, after })}`, { signal }),
  get: (id: string, signal?: AbortSignal) => request<Automation>(automationPath(id), { signal }),
  // One key per submission of the form: a retried click never makes a second automation.
  create: (params: NewAutomation, idempotencyKey: string) => request<Automation>(`${BASE}/automations`, { method: 'POST', body: params, idempotencyKey }),
  pause: (id: string) => request<Automation>(automationPath(id, 'pause'), { method: 'POST' }),
  resume: (id: string) => request<Automation>(automationPath(id, 'resume'), { method: 'POST' }),
  remove: (id: string) => request<{ deleted: boolean }>(automationPath(id), { method: 'DELETE' }),
  runNow: (id: string, idempotencyKey: string) => request<Invocation>(automationPath(id, 'invocations'), { method: 'POST', idempotencyKey }),
  invocations: (id: string, after: string, signal?: AbortSignal) => request<Page<Invocation>>(`${automationPath(id, 'invocations')}${query({ limit: 50, after })}`, { signal }),
  preview: (expression: string, timezone: string, signal?: AbortSignal) =>
    request<SchedulePreview>(`${BASE}/automation-schedules/preview${query({ expression, timezone, count: 5 })}`, { signal }),
};

/** The browser's IANA time zone (the form's default). */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

/** Unix seconds as a wall-clock time in `timeZone` (the schedule's zone), with the zone's short name. */
export function inZone(unixSeconds: number, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, { weekday: 'short', year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit', second: '2-digit', timeZone, timeZoneName: 'short' }).format(
      new Date(unixSeconds * 1000),
    );
  } catch {
    return new Date(unixSeconds * 1000).toISOString();
  }
}

/** The first message's text of a new-session target, or the instructions of an existing-session one. */
export function targetText(target: AutomationTarget): string {
  if (target.type === 'existing_session') return target.instructions;
  return target.input.flatMap((message) => message.content.map((part) => part.text ?? '')).join(' ');
}
