import type { SchemaObject } from '@nestjs/swagger';
import { PAUSE_REASONS } from '#libs/automations';
import { BUDGET_LIMIT_KEYS, BUDGET_ON_EXCEEDED, BUDGET_SCOPE_KINDS } from '#libs/budgets';
import { SESSION_STATUSES } from '#libs/engine';
import { DEFAULT_RETRY_SCHEDULE_MS, RETRY_AFTER_CAP_MS, signatureHeader, WEBHOOK_EVENT_TYPES, type WebhookEventType, type WebhookPayload } from '#libs/webhooks';
import { AT, SESSION_ID, TURN_ID, WEBHOOK_WITH_SECRET_EXAMPLE } from './examples.js';
import { TAGS } from './tags.js';

/**
 * What a webhook receiver gets (README "Webhooks"), documented for an
 * OpenAPI 3.0 document: `WebhookPayload` (what every body has, a discriminator on `type`), one
 * member schema per event type (the base narrowed), and `x-webhooks` (3.1's `webhooks`, as Redocly and Redoc read it in a
 * 3.0 document): per event type, the POST the API sends, its three signature headers and what each
 * answer of the receiver means. Each body mirrors webhookPayloadOf (libs/webhooks) and is closed.
 */

type DataField = keyof WebhookPayload['data'];

interface PayloadSpec {
  /** The component name of the payload schema (also the operation id, in camel case). */
  name: string;
  summary: string;
  /** The fields of `data`, required unless named in `optional`. */
  data: Partial<Record<DataField, SchemaObject>>;
  optional?: DataField[];
  /** Whether the payload announces a session event (and so carries `yuxi.seq`): all but the test send. */
  session: boolean;
  /** A payload as the API sends it (the lint test checks it against the schema; the e2e tests check real ones). */
  example: WebhookPayload;
}

const SESSION_FIELD: SchemaObject = { type: 'string', description: 'The session the event belongs to: read it with `GET /api/v1/agents/sessions/{session_id}`.' };
const TURN_FIELD: SchemaObject = { type: 'string', description: 'The turn: read it (status, error, waitpoint, usage) with `GET /api/v1/agents/sessions/{session_id}/turns/{turn_id}`, its items with `…/turns/{turn_id}/items`.' };
const ERROR_CODE_FIELD: SchemaObject = { type: 'string', description: 'The turn\'s `error.code` (see PublicErrorDto), when it has an error.', example: 'model_bad_request' };
const terminal = (status: 'completed' | 'failed' | 'cancelled'): SchemaObject => ({ type: 'string', enum: [status], description: 'The turn\'s status.' });

const EVENT_ID = 'evt_0193a5c27e597b3c8e1f2a4b6c8d0e10';
const SUBAGENT_ID = '0193a5c2-8a01-7b22-9c3d-4e5f6a7b8c11';

const AUTOMATION_ID = '0193a5c2-9b01-7c22-8d3e-4f5a6b7c8d21';
const INVOCATION_ID = '0193a5c2-9b02-7c22-8d3e-4f5a6b7c8d22';
const AUTOMATION_FIELD: SchemaObject = { type: 'string', description: 'The automation: read it with `GET /api/v1/agents/automations/{automation_id}`.' };
const INVOCATION_FIELD: SchemaObject = { type: 'string', description: 'The invocation that failed: `GET /api/v1/agents/automations/{automation_id}/invocations/{invocation_id}` (its `error`).' };
const AUTOMATION_ERROR_FIELD: SchemaObject = { type: 'string', description: 'The invocation\'s `error.code` (see PublicErrorDto).', example: 'not_found' };
const PAUSE_REASON_FIELD: SchemaObject = {
  type: 'string',
  enum: [...PAUSE_REASONS],
  description: 'Why the service paused the automation (its `pause_reason`); resume it once the cause is fixed.',
};

/** Every type of WEBHOOK_EVENT_TYPES has its spec (the compiler says when one is missing or stale). */
const PAYLOAD_SPECS: { [K in WebhookEventType]: PayloadSpec & { example: { type: K } } } = {
  'agent.session.created': {
    name: 'WebhookSessionCreatedPayload',
    summary: 'A session was created',
    session: true,
    data: { session_id: SESSION_FIELD, status: { type: 'string', enum: [...SESSION_STATUSES], description: 'The session\'s status when it was created (`in_progress` when it was created with a first input).' } },
    example: { id: 'evt_0193a5c27e4d7b3c8e1f2a4b6c8d0e04', type: 'agent.session.created', created_at: AT, data: { session_id: SESSION_ID, status: 'in_progress' }, yuxi: { seq: 1 } },
  },
  'agent.session.turn.completed': {
    name: 'WebhookTurnCompletedPayload',
    summary: 'A turn completed',
    session: true,
    data: { session_id: SESSION_FIELD, turn_id: TURN_FIELD, status: terminal('completed') },
    example: { id: EVENT_ID, type: 'agent.session.turn.completed', created_at: AT + 1, data: { session_id: SESSION_ID, turn_id: TURN_ID, status: 'completed' }, yuxi: { seq: 12 } },
  },
  'agent.session.turn.failed': {
    name: 'WebhookTurnFailedPayload',
    summary: 'A turn failed',
    session: true,
    data: { session_id: SESSION_FIELD, turn_id: TURN_FIELD, status: terminal('failed'), error_code: ERROR_CODE_FIELD },
    optional: ['error_code'],
    example: { id: EVENT_ID, type: 'agent.session.turn.failed', created_at: AT + 1, data: { session_id: SESSION_ID, turn_id: TURN_ID, status: 'failed', error_code: 'model_rate_limited' }, yuxi: { seq: 9 } },
  },
  'agent.session.turn.cancelled': {
    name: 'WebhookTurnCancelledPayload',
    summary: 'A turn was cancelled',
    session: true,
    data: { session_id: SESSION_FIELD, turn_id: TURN_FIELD, status: terminal('cancelled'), error_code: ERROR_CODE_FIELD },
    optional: ['error_code'],
    example: { id: EVENT_ID, type: 'agent.session.turn.cancelled', created_at: AT + 1, data: { session_id: SESSION_ID, turn_id: TURN_ID, status: 'cancelled' }, yuxi: { seq: 10 } },
  },
  'yuxi.session.turn.waiting': {
    name: 'WebhookTurnWaitingPayload',
    summary: 'Action required: a turn waits at a waitpoint',
    session: true,
    data: {
      session_id: SESSION_FIELD,
      turn_id: TURN_FIELD,
      status: { type: 'string', enum: ['requires_action'], description: 'The turn\'s status: it waits for an answer (`POST …/events` with `yuxi.session.input.resume`, or `tool_result`s).' },
      waitpoint_kind: {
        type: 'string',
        enum: ['question', 'approval', 'client_tool', 'budget'],
        description: 'What the turn waits for: answers to questions, approval decisions, the results of client-executed tool calls, or a person\'s approval once a budget has room again. The waitpoint itself is in the turn (`yuxi.waitpoint`).',
      },
    },
    example: { id: EVENT_ID, type: 'yuxi.session.turn.waiting', created_at: AT + 1, data: { session_id: SESSION_ID, turn_id: TURN_ID, status: 'requires_action', waitpoint_kind: 'approval' }, yuxi: { seq: 8 } },
  },
  'yuxi.session.budget.reached': {
    name: 'WebhookBudgetReachedPayload',
    summary: 'A budget has no room for a turn\'s next call',
    session: true,
    data: {
      session_id: SESSION_FIELD,
      turn_id: TURN_FIELD,
      budget_id: { type: 'string', description: 'The budget: read it (limits, `spent`) with `GET /api/v1/agents/budgets/{budget_id}`.' },
      scope: {
        type: 'object',
        required: ['kind', 'id'],
        additionalProperties: false,
        properties: { kind: { type: 'string', enum: [...BUDGET_SCOPE_KINDS] }, id: { type: 'string', description: 'The session, project, app, end user, agent or user the budget covers.' } },
      },
      limit: { type: 'string', enum: [...BUDGET_LIMIT_KEYS], description: 'The limit key reached.' },
      limit_value: { type: 'integer', minimum: 0, description: 'The limit\'s value.' },
      spent: { type: 'integer', minimum: 0, description: 'What was spent of it in the budget\'s period (committed plus held by calls in flight).' },
      on_exceeded: { type: 'string', enum: [...BUDGET_ON_EXCEEDED], description: '`pause`: the turn waits at a `budget` waitpoint; `fail`: the turn fails with `budget_exceeded`.' },
    },
    example: {
      id: EVENT_ID,
      type: 'yuxi.session.budget.reached',
      created_at: AT + 1,
      data: { session_id: SESSION_ID, turn_id: TURN_ID, budget_id: '0193a5c2-8a01-7b22-9c3d-4e5f6a7b8c21', scope: { kind: 'session', id: SESSION_ID }, limit: 'model_calls', limit_value: 1, spent: 1, on_exceeded: 'pause' },
      yuxi: { seq: 8 },
    },
  },
  'agent.session.subagent.created': {
    name: 'WebhookSubagentCreatedPayload',
    summary: 'A coordinator created a member session',
    session: true,
    data: {
      session_id: SESSION_FIELD,
      turn_id: { ...TURN_FIELD, description: 'The coordinator\'s turn that created the member.' },
      subagent_id: { type: 'string', description: 'The member\'s session id (a session of the same owner, whose own events are announced too).' },
    },
    example: { id: EVENT_ID, type: 'agent.session.subagent.created', created_at: AT + 1, data: { session_id: SESSION_ID, turn_id: TURN_ID, subagent_id: SUBAGENT_ID }, yuxi: { seq: 7 } },
  },
  'yuxi.session.turn.context_compression': {
    name: 'WebhookContextCompressionPayload',
    summary: 'A turn\'s model context was compacted, or could not be',
    session: true,
    data: {
      session_id: SESSION_FIELD,
      turn_id: TURN_FIELD,
      status: { type: 'string', enum: ['completed', 'failed'], description: '`completed`: the context was compacted (the `compaction` item is in the turn\'s items); `failed`: it could not be (`error_code`).' },
      error_code: { ...ERROR_CODE_FIELD, description: 'Why the compaction failed (`failed` only).' },
    },
    optional: ['error_code'],
    example: { id: EVENT_ID, type: 'yuxi.session.turn.context_compression', created_at: AT + 1, data: { session_id: SESSION_ID, turn_id: TURN_ID, status: 'completed' }, yuxi: { seq: 5 } },
  },
  'agent.automation.invocation.failed': {
    name: 'WebhookAutomationInvocationFailedPayload',
    summary: 'An automation\'s invocation failed',
    session: false,
    data: { automation_id: AUTOMATION_FIELD, invocation_id: INVOCATION_FIELD, error_code: AUTOMATION_ERROR_FIELD, pause_reason: PAUSE_REASON_FIELD },
    optional: ['pause_reason'],
    example: {
      id: 'evt_0193a5b07a8b7c9d8e0f1a2b3c4d5e71',
      type: 'agent.automation.invocation.failed',
      created_at: AT,
      data: { automation_id: AUTOMATION_ID, invocation_id: INVOCATION_ID, error_code: 'not_found', pause_reason: 'target_session_deleted' },
    },
  },
  'yuxi.automation.paused': {
    name: 'WebhookAutomationPausedPayload',
    summary: 'The service paused an automation',
    session: false,
    data: { automation_id: AUTOMATION_FIELD, invocation_id: INVOCATION_FIELD, error_code: AUTOMATION_ERROR_FIELD, pause_reason: PAUSE_REASON_FIELD },
    example: {
      id: 'evt_0193a5b07a8b7c9d8e0f1a2b3c4d5e72',
      type: 'yuxi.automation.paused',
      created_at: AT,
      data: { automation_id: AUTOMATION_ID, invocation_id: INVOCATION_ID, error_code: 'not_found', pause_reason: 'target_session_deleted' },
    },
  },
  'webhook.test': {
    name: 'WebhookTestPayload',
    summary: 'A test send',
    session: false,
    data: { endpoint_id: { type: 'string', description: 'The endpoint the test was sent to (`POST /api/v1/agents/webhooks/{webhook_id}/test`).' } },
    example: { id: 'evt_0193a5b07a8b7c9d8e0f1a2b3c4d5e70', type: 'webhook.test', created_at: AT, data: { endpoint_id: WEBHOOK_WITH_SECRET_EXAMPLE.id } },
  },
};

const ENTRIES = Object.entries(PAYLOAD_SPECS) as [WebhookEventType, PayloadSpec][];

/** The component name of each webhook event type's payload schema. */
export const WEBHOOK_PAYLOAD_SCHEMA_NAMES: Record<WebhookEventType, string> = Object.fromEntries(ENTRIES.map(([type, spec]) => [type, spec.name])) as Record<WebhookEventType, string>;

const duration = (ms: number): string => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`);
const SCHEDULE = DEFAULT_RETRY_SCHEDULE_MS.map(duration).join(', ');

/** The delivery rules, in Markdown: the API description's Webhooks section and every x-webhooks operation say them. */
export const WEBHOOK_DELIVERY_RULES = `- **Signature** (Standard Webhooks): \`webhook-signature\` is \`v1,<base64 HMAC-SHA256>\` of \`{webhook-id}.{webhook-timestamp}.{raw body}\`, keyed by the bytes of the endpoint's secret (the base64 after \`whsec_\`). For 24 hours after a rotation two signatures are sent, space-separated (new secret first): accept the delivery when any one matches. Verify the raw body before parsing it, and refuse a \`webhook-timestamp\` far from your clock (the SDK's \`verifyWebhook\` does both, with 5 minutes of tolerance). Every attempt is signed afresh: new timestamp, same \`webhook-id\`.
- **Answer**: any 2xx whose status line arrives within WEBHOOK_TIMEOUT_MS (15 s by default) is success; the body is ignored (its first 1,024 characters are kept in the delivery log). Answer quickly and do the work afterwards. Redirects are not followed (a 3xx is a failure).
- **Retries**: any other answer, a timeout or a network error fails the attempt, and the delivery is retried after ${SCHEDULE} (each ±10 %; WEBHOOK_RETRY_SCHEDULE overrides), then given up (\`failed\` in the delivery log). A \`Retry-After\` asking for longer than the next delay is honoured, up to ${RETRY_AFTER_CAP_MS / 3_600_000} h; it never shortens it. **410 Gone** disables the endpoint at once (\`disabled_reason\` gone): nothing more is attempted until its owner enables it again. An endpoint whose attempts have all failed for WEBHOOK_DISABLE_AFTER_S (5 days by default) is disabled too (\`failing\`).
- **Order**: deliveries of one session to one endpoint go out one at a time in the order of the session's events (\`yuxi.seq\`): the next waits until the one before has succeeded or been given up. Sessions are independent of each other; redeliveries and test sends are outside any order.
- **Duplicates**: delivery is at least once (a lost answer means another attempt). \`webhook-id\` (the payload's \`id\`, the session event's \`event_id\`) is the same on every attempt and on a redelivery: deduplicate on it.
- **Thin payloads**: a payload says what happened and where (\`data\`); read the rest (the turn, its items, the waitpoint) with GET, which always shows the current state.`;

/** The webhooks part of the API description (openapi.ts folds it under a summary of its own). */
export const WEBHOOKS_DESCRIPTION = `The caller's webhook endpoints (\`/api/v1/agents/webhooks\`) receive a signed POST (\`content-type: application/json\`) for these events
of the caller's sessions. Each body follows the schema named here, each a \`WebhookPayload\` (whose discriminator on \`type\`
maps every type to its schema); \`x-webhooks\` (OpenAPI 3.1's \`webhooks\`, in this 3.0 document) describes each POST, with its headers and the answers it expects.

| event | schema | meaning |
|---|---|---|
${ENTRIES.map(([type, spec]) => `| \`${type}\` | \`${spec.name}\` | ${WEBHOOK_EVENT_TYPES[type]} |`).join('\n')}

${WEBHOOK_DELIVERY_RULES}
`;

const SEQ: SchemaObject = {
  type: 'integer',
  minimum: 1,
  description: 'The event\'s `yuxi.seq` on the session stream (1, 2, 3… per session): deliveries to an endpoint keep this order within a session.',
};

const ID: SchemaObject = { type: 'string', description: 'The event id, also sent as `webhook-id`: the same on every attempt and redelivery (deduplicate on it).', example: EVENT_ID };
const CREATED_AT: SchemaObject = { type: 'integer', description: 'When the event happened, Unix seconds.' };

/**
 * A member: the base (`WebhookPayload`, whose discriminator maps `type` to it) narrowed to one
 * type, its `data` and `yuxi` closed. Every top-level field is listed again so that the member
 * alone says the body is closed.
 */
function payloadSchema(type: WebhookEventType, spec: PayloadSpec): SchemaObject {
  const data = spec.data as Record<string, SchemaObject>;
  const requiredData = Object.keys(data).filter((field) => !spec.optional?.includes(field as DataField));
  return {
    description: WEBHOOK_EVENT_TYPES[type],
    allOf: [
      { $ref: '#/components/schemas/WebhookPayload' },
      {
        type: 'object',
        required: ['id', 'type', 'created_at', 'data', ...(spec.session ? ['yuxi'] : [])],
        additionalProperties: false,
        properties: {
          id: ID,
          type: { type: 'string', enum: [type] },
          created_at: CREATED_AT,
          data: { type: 'object', description: 'What happened, and where: ids to read the rest with GET.', required: requiredData, additionalProperties: false, properties: data },
          ...(spec.session ? { yuxi: { type: 'object', description: 'Extensions.', required: ['seq'], additionalProperties: false, properties: { seq: SEQ } } } : {}),
        },
      },
    ],
    example: spec.example,
  };
}

/**
 * Component schemas: `WebhookPayload`, what every body has, with a discriminator on `type` that
 * maps each event type to its member schema (OpenAPI 3.0's inheritance: each member is the base
 * and its own part), and the members.
 */
export function webhookPayloadSchemas(): Record<string, SchemaObject> {
  const schemas: Record<string, SchemaObject> = {
    WebhookPayload: {
      type: 'object',
      description: 'The JSON body of a webhook delivery. `type` tells which event it announces, and so which member schema (the discriminator\'s mapping) the body follows.',
      required: ['id', 'type', 'created_at', 'data'],
      properties: {
        id: ID,
        type: { type: 'string', enum: ENTRIES.map(([type]) => type) },
        created_at: CREATED_AT,
        data: { type: 'object', additionalProperties: true, description: 'The event\'s facts: which depend on `type`.' },
        yuxi: { type: 'object', additionalProperties: true, description: 'Extensions: `seq` on the events of a session (all but `webhook.test`).' },
      },
      discriminator: { propertyName: 'type', mapping: Object.fromEntries(ENTRIES.map(([type, spec]) => [type, `#/components/schemas/${spec.name}`])) },
    },
  };
  for (const [type, spec] of ENTRIES) schemas[spec.name] = payloadSchema(type, spec);
  return schemas;
}

const camel = (name: string): string => name.charAt(0).toLowerCase() + name.slice(1).replace(/Payload$/, '');

/** The headers of every delivery, with examples that verify against the example body and secret. */
function headers(example: WebhookPayload): object[] {
  return [
    {
      name: 'webhook-id',
      in: 'header',
      required: true,
      description: 'The event id (the payload\'s `id`, the session event\'s `event_id`): the same on every attempt and on a redelivery. Deduplicate on it.',
      schema: { type: 'string', example: example.id },
    },
    {
      name: 'webhook-timestamp',
      in: 'header',
      required: true,
      description: 'When this attempt was signed, Unix seconds (each attempt signs afresh). Refuse a delivery whose timestamp is too far from your clock (replays).',
      schema: { type: 'integer', example: AT + 2 },
    },
    {
      name: 'webhook-signature',
      in: 'header',
      required: true,
      description:
        'One or two space-separated `v1,<base64 HMAC-SHA256>` of `{webhook-id}.{webhook-timestamp}.{raw body}`, keyed by the base64-decoded endpoint secret (after `whsec_`); two during the 24 hours after a rotation (new secret first). The example is the signature of the example body with the example secret of `createWebhookEndpoint`.',
      schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$', example: signatureHeader([WEBHOOK_WITH_SECRET_EXAMPLE.secret], example.id, AT + 2, JSON.stringify(example)) },
    },
  ];
}

/**
 * `x-webhooks`: per event type, the POST the API sends to an endpoint subscribed to it. A 3.0
 * document has no `webhooks` object; Redocly and Redoc read this extension as one (path items
 * keyed by name), so its references count, its examples are checked against their schemas.
 */
export function webhookOperations(): Record<string, object> {
  return Object.fromEntries(
    ENTRIES.map(([type, spec]) => [
      type,
      {
        post: {
          operationId: camel(spec.name),
          summary: spec.summary,
          description: `${WEBHOOK_EVENT_TYPES[type]}\n\nSent by the API to each enabled endpoint of the owner (of the session, or of the automation) whose \`event_types\` include \`${type}\` (or are null).${type === 'webhook.test' ? ' Test sends go to the one endpoint tested, enabled or not, attempted once and never retried.' : ''}\n\n${WEBHOOK_DELIVERY_RULES}`,
          tags: [TAGS.webhooks.name],
          // No bearer credential: the receiver authenticates the API by the signature.
          security: [],
          parameters: headers(spec.example),
          requestBody: {
            required: true,
            description: 'The payload, exactly as signed: verify the raw bytes before parsing them.',
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${spec.name}` }, examples: { [type]: { value: spec.example } } } },
          },
          responses: {
            '2XX': { description: 'Received: the delivery succeeded (when the status line arrived within WEBHOOK_TIMEOUT_MS, 15 s by default). The body is ignored.' },
            '410': { description: 'Gone: the endpoint is disabled at once (`disabled_reason` gone), this delivery fails and nothing more is sent until its owner enables the endpoint again.' },
            default: {
              description: `Anything else (another status, a redirect, no answer within WEBHOOK_TIMEOUT_MS, a network error): the attempt failed and the delivery is retried (after ${SCHEDULE}), in order with the session's later deliveries behind it.`,
              headers: { 'Retry-After': { description: `Seconds, or an HTTP date: wait at least this long before the next attempt (honoured when longer than the scheduled delay, up to ${RETRY_AFTER_CAP_MS / 3_600_000} h).`, schema: { type: 'string' } } },
            },
          },
        },
      },
    ]),
  );
}
