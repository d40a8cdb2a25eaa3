import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CODES, type ErrorCode } from '#libs/errors';
import { EVENT_TYPES, type EventType } from '#libs/events';
import { BuiltinToolDto, FunctionToolDto, McpBearerAuthDto, McpClientCredentialsAuthDto, McpToolDto } from '#libs/agents';
import {
  AnswerResponseDto,
  ApprovalResponseDto,
  CancelInputEventDto,
  CancelTurnEventDto,
  CompactEventDto,
  ContinueQueueEventDto,
  TreeContinueEventDto,
  TreeStopEventDto,
  MessageEventDto,
  PromoteInputEventDto,
  ResumeEventDto,
  ToolResultEventDto,
  UpstreamApprovalResultEventDto,
  UpstreamToolResultEventDto,
} from '#libs/protocol';
import { TurnStateDto } from '#libs/engine';
import { errorExample } from './error-examples.js';
import { EVENT_SCHEMA_NAMES, SSE_FRAMING, sessionEventSchemas, sseContent } from './session-events.js';
import { TAGS } from './tags.js';
import { WEBHOOKS_DESCRIPTION, webhookOperations, webhookPayloadSchemas } from './webhook-payloads.js';

const ERROR_TABLE = Object.entries(ERROR_CODES)
  .map(([code, spec]) => `| \`${code}\` | ${spec.status} | ${spec.retryable ? 'yes' : 'no'} | ${spec.description} |`)
  .join('\n');

const EVENT_TABLE = Object.entries(EVENT_TYPES)
  .map(([type, description]) => `| \`${type}\` | \`${EVENT_SCHEMA_NAMES[type as EventType]}\` | ${description} |`)
  .join('\n');

/**
 * A reference section of the description, folded: Swagger UI shows the description above its
 * Authorize button and the operations, so the top stays a few lines long and each long table opens
 * on demand (a `<details>` block; the Markdown inside it is rendered, blank lines around it).
 */
function folded(summary: string, body: string): string {
  return `<details>\n<summary><strong>${summary}</strong></summary>\n\n${body.trim()}\n\n</details>`;
}

const ERRORS_SECTION = `Every error has the shape \`{"error": {"code", "message", "type", "retryable", "request_id", "details"}}\`
and every response carries \`X-Request-Id\`.

| code | status | retryable | meaning |
|---|---|---|---|
${ERROR_TABLE}`;

const EVENTS_SECTION = `\`GET /api/v1/agents/sessions/{session_id}/events\` streams the whole session across turns. Each message
has \`id:\` (an opaque cursor; send it back as \`Last-Event-ID\` to resume strictly after it),
\`event:\` (the type) and \`data:\` (the event JSON with a stable \`event_id\`). Without
\`Last-Event-ID\` the stream starts with the retained replay window. Comment lines (\`: ping\`) are heartbeats.

Each \`data:\` follows the schema \`SessionEvent\`: a \`oneOf\` with one member per event type and a
discriminator on \`type\`, so a generated client narrows an event by its type. Durable events carry
\`yuxi.seq\` (1, 2, 3… per session, without gaps); live ones (text and reasoning deltas, the
announcement of a streaming assistant message, a tool call's progress) do not. The stream responses give the union as
the schema of their \`text/event-stream\` media type: the schema of each message's \`data:\`.

| event | schema | meaning |
|---|---|---|
${EVENT_TABLE}`;

const DESCRIPTION = `
Durable Agents Sessions API. Create a session with a saved agent, submit inputs, and observe turns,
runs, items and a resumable event stream.

Authenticate with **Authorize** (just below): an API key, or a user token where JWT is configured;
every call then sends \`Authorization: Bearer <key or token>\`. Every write requires an
\`Idempotency-Key\`; a retry with the same key and intent returns the first response byte for byte.
Resources of other callers answer 404. Every example request in this document succeeds as is on a
fresh install (\`default-chatbot\` runs the deterministic \`scripted:echo\` model), except that the
ids of your own sessions, turns and inputs go in the path.

The reference, folded (open a section to read it):

${folded('Errors: the error shape, and every code with its status and whether it is retryable', ERRORS_SECTION)}

${folded('Server-sent events: the session event stream and every event type', EVENTS_SECTION)}

${folded('Webhooks: what the API sends to webhook endpoints, and how it signs and retries', WEBHOOKS_DESCRIPTION)}
`;

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Agents Public API')
    .setDescription(DESCRIPTION)
    .setVersion('1.0.0')
    // Relative: "Try it out" calls whichever host serves this document.
    .addServer('/', 'This server')
    .addBearerAuth({
      type: 'http',
      scheme: 'bearer',
      description:
        'An API key or, where JWT_SECRET or JWT_JWKS_URL is configured, a user token (JWT); paste it without `Bearer`. Keys created with POST /api/v1/admin/api-keys look like `yuxi_…`; the bootstrap key is BOOTSTRAP_API_KEY as set (`npm start` prints a `yx_dev_…` one).',
    });
  for (const tag of Object.values(TAGS)) builder.addTag(tag.name, tag.description);
  const config = builder.build();
  // A proprietary API with no public license text to link to (see redocly.yaml).
  config.info.license = { name: 'Proprietary' };
  config.info.contact = { name: 'Agents Sessions API maintainers' };
  // Tags are the areas of TAGS, set per operation; none from controller names.
  const document = SwaggerModule.createDocument(app, config, { autoTagControllers: false, extraModels: [
      MessageEventDto,
      CancelTurnEventDto,
      CancelInputEventDto,
      PromoteInputEventDto,
      ContinueQueueEventDto,
      TreeStopEventDto,
      TreeContinueEventDto,
      ResumeEventDto,
      ToolResultEventDto,
      UpstreamToolResultEventDto,
      UpstreamApprovalResultEventDto,
      CompactEventDto,
      AnswerResponseDto,
      ApprovalResponseDto,
      FunctionToolDto,
      BuiltinToolDto,
      McpToolDto,
      McpBearerAuthDto,
      McpClientCredentialsAuthDto,
      TurnStateDto,
    ],
  });
  document.components = document.components ?? {};
  document.components.schemas = {
    ...document.components.schemas,
    ErrorCode: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'Stable error codes; see the API description for each.' },
    ErrorType: { ...document.components.schemas?.ErrorType, description: 'The class of an error: what kind of problem, whatever the code.' },
    ...sessionEventSchemas(),
    ...webhookPayloadSchemas(),
  };
  // Open by design (a class-level option Nest lacks): an error code may gain diagnostics, clients read the keys they know.
  Object.assign(document.components.schemas.ErrorDetailsDto ?? {}, { additionalProperties: true });
  closeRequestSchemas(document);
  nullableRefs(document);
  declareCommonResponses(document);
  declarePublicOperations(document);
  declareStreamCreate(document);
  // OpenAPI 3.1's `webhooks` in this 3.0 document: what the API POSTs to webhook endpoints.
  Object.assign(document, { 'x-webhooks': webhookOperations() });
  return document;
}

const ERROR_SCHEMA = { $ref: '#/components/schemas/ErrorResponseDto' };

/**
 * `POST /sessions` with `stream: true` answers 201 with the session's event stream instead of the
 * JSON resource: the session's long-lived subscription, which does not end with the turn.
 */
function declareStreamCreate(document: OpenAPIObject): void {
  const created = document.paths['/api/v1/agents/sessions']?.post?.responses['201'] as { content?: Record<string, object>; description?: string } | undefined;
  if (!created?.content) return;
  Object.assign(created.content, sseContent());
  created.description = `${created.description ?? ''} The stream stays open across turns until the client closes it. ${SSE_FRAMING}`.trim();
}

type ErrorResponse = { description: string; headers?: Record<string, object>; content?: Record<string, { schema?: object; examples?: Record<string, object> }> };
type Operation = { parameters?: object[]; requestBody?: object; responses: Record<string, ErrorResponse> };

const END_USER_HEADER = {
  name: 'X-End-User-Id',
  in: 'header',
  required: false,
  description:
    "Only with an API key bound to an app (`app_id`): the end user of the app the call acts for (without it, the app's default end user), 1–128 characters without leading or trailing whitespace (else 422 `validation_failed`). Any other credential sending it is 403 `forbidden`.",
  // What libs/auth's authenticator enforces: non-empty, and trim() would change nothing.
  schema: { type: 'string', minLength: 1, maxLength: 128, pattern: '^\\S(?:.*\\S)?$' },
};

/** Adds `code` to the operation's response of its status: its line in the description and its example. */
function addError(operation: Operation, code: ErrorCode): void {
  const status = String(ERROR_CODES[code].status);
  const response = (operation.responses[status] ??= { description: '', content: { 'application/json': { schema: ERROR_SCHEMA } } });
  if (!response.description.includes(`\`${code}\``)) {
    const line = `\`${code}\`: ${ERROR_CODES[code].description}`;
    response.description = response.description ? `${response.description}<br>${line}` : line;
  }
  for (const media of Object.values(response.content ?? {})) (media.examples ??= {})[code] ??= errorExample(code);
}

/**
 * What every operation can answer whatever its handler does, declared once here rather than on
 * each route: the X-Request-Id header on every response; under /api, what authentication and its
 * rate limits answer before the route (429 with Retry-After, 403 and 422 for a misused
 * X-End-User-Id) and 503 (a dependency down); and on every operation, what the body parser answers
 * before the route whether or not the operation takes a body (it runs for every method): 415 for a
 * body that is not JSON, 413 over the size limit, 422 `invalid_json`.
 */
function declareCommonResponses(document: OpenAPIObject): void {
  const requestId = { description: 'The request id (echoes a caller-sent X-Request-Id); errors carry it as `error.request_id`.', schema: { type: 'string' } };
  const retryAfter = { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } };
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'post', 'put', 'delete', 'patch'] as const) {
      const operation = item[method] as Operation | undefined;
      if (!operation) continue;
      if (path.startsWith('/api/')) {
        operation.parameters = [...(operation.parameters ?? []), END_USER_HEADER];
        for (const code of ['forbidden', 'validation_failed', 'rate_limited', 'authentication_throttled', 'service_unavailable'] as const) addError(operation, code);
      }
      for (const code of ['unsupported_media_type', 'payload_too_large', 'invalid_json'] as const) addError(operation, code);
      for (const [status, response] of Object.entries(operation.responses)) {
        // Errors are JSON even where the success is an event stream (refused before any SSE header).
        if (Number(status) >= 400 && response.content) {
          const examples = Object.assign({}, ...Object.values(response.content).map((media) => media.examples ?? {})) as Record<string, object>;
          response.content = { 'application/json': { schema: ERROR_SCHEMA, ...(Object.keys(examples).length > 0 ? { examples } : {}) } };
        }
        response.headers = { 'X-Request-Id': requestId, ...(status === '429' ? { 'Retry-After': retryAfter } : {}), ...response.headers };
      }
    }
  }
}

const NULL_ONLY = { type: 'object', nullable: true, enum: [null], description: 'null' };

/**
 * Nest writes a nullable reference as `{nullable: true, allOf: [{$ref}]}`, which does not accept
 * null: `nullable` only widens a `type` of the same schema, and the referenced schema still says
 * object (OpenAPI 3.0.3). Validators (Redocly's, a client's) then reject every null such a field
 * holds, so each is rewritten as "the reference, or null".
 */
function nullableRefs(document: OpenAPIObject): void {
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    const schema = node as Record<string, unknown>;
    const allOf = schema.allOf as { $ref?: string }[] | undefined;
    if (schema.nullable === true && allOf?.length === 1 && allOf[0]?.$ref && !schema.properties) {
      delete schema.nullable;
      delete schema.type;
      delete schema.allOf;
      schema.anyOf = [{ $ref: allOf[0].$ref }, NULL_ONLY];
      return;
    }
    Object.values(schema).forEach(visit);
  };
  visit(document.components?.schemas);
}

/**
 * Request bodies are closed: the server refuses unknown fields (422), so every object schema a
 * request body reaches says `additionalProperties: false` (Nest has no class-level option for it).
 */
function closeRequestSchemas(document: OpenAPIObject): void {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Record<string, unknown>>;
  const seen = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    const ref = (node as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
      const name = ref.slice('#/components/schemas/'.length);
      if (seen.has(name) || !schemas[name]) return;
      seen.add(name);
      const schema = schemas[name];
      if (schema.properties && schema.additionalProperties === undefined) schema.additionalProperties = false;
      return visit(schema);
    }
    Object.values(node).forEach(visit);
  };
  for (const item of Object.values(document.paths)) {
    for (const method of ['get', 'post', 'put', 'delete', 'patch'] as const) visit(item[method]?.requestBody);
  }
}

/** Health and metrics need no credentials: say so explicitly (an empty security requirement). */
function declarePublicOperations(document: OpenAPIObject): void {
  for (const [path, item] of Object.entries(document.paths)) {
    if (path.startsWith('/api/')) continue;
    for (const method of ['get', 'post', 'put', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (operation) operation.security ??= [];
    }
  }
}

/** Swagger UI at /docs and the generated document at /openapi.json. */
export function mountOpenApi(app: INestApplication): void {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', customSiteTitle: 'Agents Public API' });
}
