/**
 * What a webhook announces (README "Webhooks"): a few facts of a session an integrator's
 * system acts on, as a thin payload `{id, type, created_at, data}` whose `id` is the session
 * event's `event_id` (the receiver's dedup key, the same on every attempt and redelivery). The
 * receiver reads the rest (the turn, its items) with GET. Pure: the outbox builds these bodies
 * before its INSERT, the sender signs them as stored.
 */
export const WEBHOOK_EVENT_TYPES = {
  'agent.session.created': 'A session was created (`data.status` is its status).',
  'agent.session.turn.completed': 'A turn completed (`data.turn_id`, `data.status` = completed).',
  'agent.session.turn.failed': 'A turn failed (`data.error_code` is the turn\'s error code).',
  'agent.session.turn.cancelled': 'A turn was cancelled.',
  'yuxi.session.turn.waiting':
    'Action required: the turn waits at a waitpoint (`data.waitpoint_kind`: question, approval, client_tool or budget). Read the waitpoint with GET …/turns/{turn_id} and answer it.',
  'yuxi.session.budget.reached':
    'A budget in the session\'s scope has no room for the turn\'s next call (`data.budget_id`, `data.scope`, `data.limit`, `data.limit_value`, `data.spent`, `data.on_exceeded`): the turn waits at a `budget` waitpoint (`pause`) or fails with `budget_exceeded` (`fail`).',
  'agent.session.subagent.created': 'A coordinator created a member session (`data.subagent_id`).',
  'yuxi.session.turn.context_compression': 'The model context of a turn was compacted (`data.status` = completed) or could not be (failed, `data.error_code`).',
  'agent.automation.invocation.failed':
    'An automation\'s invocation failed (`data.automation_id`, `data.invocation_id`, `data.error_code`; `data.pause_reason` when its target is gone and the automation was paused).',
  'yuxi.automation.paused':
    'The service paused an automation: its target session or agent is gone, or its owner is unavailable (`data.automation_id`, `data.invocation_id`, `data.error_code`, `data.pause_reason`).',
  'webhook.test': 'A test send (`POST /api/v1/agents/webhooks/{id}/test`); `data.endpoint_id` names the endpoint.',
} as const;

export type WebhookEventType = keyof typeof WEBHOOK_EVENT_TYPES;

/** The event types no session's outbox makes: written as standalone deliveries (a test send, an automation's failure). */
export const STANDALONE_WEBHOOK_TYPES: ReadonlySet<string> = new Set(['webhook.test', 'agent.automation.invocation.failed', 'yuxi.automation.paused']);

/** The event types a session's outbox fans out. */
export const SESSION_WEBHOOK_TYPES: ReadonlySet<string> = new Set(Object.keys(WEBHOOK_EVENT_TYPES).filter((type) => !STANDALONE_WEBHOOK_TYPES.has(type)));

export function isWebhookEventType(type: string): type is WebhookEventType {
  return Object.hasOwn(WEBHOOK_EVENT_TYPES, type);
}

/** The body a receiver gets. */
export interface WebhookPayload {
  id: string;
  type: WebhookEventType;
  created_at: number;
  data: {
    session_id?: string;
    turn_id?: string;
    status?: string;
    waitpoint_kind?: string;
    error_code?: string;
    subagent_id?: string;
    endpoint_id?: string;
    /** yuxi.session.budget.reached: the budget, its scope, the limit reached, its value, what was spent and what happens. */
    budget_id?: string;
    scope?: { kind: string; id: string };
    limit?: string;
    limit_value?: number;
    spent?: number;
    on_exceeded?: string;
    /** agent.automation.invocation.failed, yuxi.automation.paused: the automation, its invocation and why. */
    automation_id?: string;
    invocation_id?: string;
    pause_reason?: string;
  };
  /** The event's `yuxi.seq` on the session stream: per session 1, 2, 3…, the order deliveries keep. */
  yuxi?: { seq: number | string };
}

/** A session event as the outbox stamps it (only what a payload reads). */
export interface StampedEvent {
  type: string;
  event_id: string;
  session_id: string;
  created_at: number;
  [field: string]: unknown;
}

/**
 * The webhook body of a session event, or null when the event is not one webhooks announce (or
 * is a live phase of one: compaction `started`). `seq` stands in for the sequence number, which the
 * outbox's INSERT fills in (a token, as for the event's own payload).
 */
export function webhookPayloadOf(event: StampedEvent, seq: string): WebhookPayload | null {
  if (!SESSION_WEBHOOK_TYPES.has(event.type)) return null;
  const data: WebhookPayload['data'] = { session_id: event.session_id };
  const turnId = typeof event.turn_id === 'string' ? event.turn_id : undefined;
  if (turnId) data.turn_id = turnId;
  const field = (object: unknown, key: string): string | undefined => {
    const value = object && typeof object === 'object' ? (object as Record<string, unknown>)[key] : undefined;
    return typeof value === 'string' ? value : undefined;
  };
  switch (event.type) {
    case 'agent.session.created':
      data.status = field(event.session, 'status');
      break;
    case 'agent.session.turn.completed':
    case 'agent.session.turn.failed':
    case 'agent.session.turn.cancelled':
      data.status = event.type.slice('agent.session.turn.'.length);
      data.error_code = field((event.turn as Record<string, unknown> | undefined)?.error, 'code');
      break;
    case 'yuxi.session.turn.waiting':
      data.status = 'requires_action';
      data.waitpoint_kind = field(event.waitpoint, 'kind');
      break;
    case 'agent.session.subagent.created':
      data.subagent_id = field(event.subagent, 'id');
      break;
    case 'yuxi.session.budget.reached': {
      const scope = event.scope as { kind?: unknown; id?: unknown } | undefined;
      data.budget_id = typeof event.budget_id === 'string' ? event.budget_id : undefined;
      data.scope = scope && typeof scope.kind === 'string' && typeof scope.id === 'string' ? { kind: scope.kind, id: scope.id } : undefined;
      data.limit = typeof event.limit === 'string' ? event.limit : undefined;
      data.limit_value = typeof event.limit_value === 'number' ? event.limit_value : undefined;
      data.spent = typeof event.spent === 'number' ? event.spent : undefined;
      data.on_exceeded = typeof event.on_exceeded === 'string' ? event.on_exceeded : undefined;
      break;
    }
    case 'yuxi.session.turn.context_compression':
      if (event.phase !== 'completed' && event.phase !== 'failed') return null;
      data.status = event.phase;
      data.error_code = field(event.error, 'code');
      break;
  }
  for (const key of Object.keys(data) as (keyof WebhookPayload['data'])[]) if (data[key] === undefined) delete data[key];
  return { id: event.event_id, type: event.type as WebhookEventType, created_at: event.created_at, data, yuxi: { seq } };
}
