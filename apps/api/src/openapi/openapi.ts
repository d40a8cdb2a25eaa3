import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { ERROR_CODES, type ErrorCode } from '#libs/errors';
import { EVENT_TYPES } from '#libs/events';
import { BuiltinToolDto, FunctionToolDto, McpToolDto } from '#libs/agents';
import {
  AnswerResponseDto,
  ApprovalResponseDto,
  CancelInputEventDto,
  CancelTurnEventDto,
  ContinueQueueEventDto,
  MessageEventDto,
  PromoteInputEventDto,
  ResumeEventDto,
  ToolResultEventDto,
} from '#libs/protocol';

const ERROR_TABLE = Object.entries(ERROR_CODES)
  .map(([code, spec]) => `| \`${code}\` | ${spec.status} | ${spec.retryable ? 'yes' : 'no'} | ${spec.description} |`)
  .join('\n');

const EVENT_TABLE = Object.entries(EVENT_TYPES)
  .map(([type, description]) => `| \`${type}\` | ${description} |`)
  .join('\n');

const DESCRIPTION = `
Durable Agents Sessions API. Create a session with a saved agent, submit inputs, and observe turns,
runs, items and a resumable event stream. Every write requires an \`Idempotency-Key\`; a retry with
the same key and intent returns the first response byte for byte.

Authenticate with \`Authorization: Bearer <api key>\`. Resources of other callers answer 404.

## Errors

Every error has the shape \`{"error": {"code", "message", "type", "retryable", "request_id", "details"}}\`
and every response carries \`X-Request-Id\`.

| code | status | retryable | meaning |
|---|---|---|---|
${ERROR_TABLE}

## Server-sent events

\`GET /api/v1/agents/sessions/{session_id}/events\` streams the whole session across turns. Each message
has \`id:\` (an opaque cursor; send it back as \`Last-Event-ID\` to resume strictly after it),
\`event:\` (the type) and \`data:\` (the event JSON with a stable \`event_id\`). Without
\`Last-Event-ID\` the stream starts with the retained replay window. Comment lines (\`: ping\`) are heartbeats.

| event | meaning |
|---|---|
${EVENT_TABLE}
`;

export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Agents Public API')
    .setDescription(DESCRIPTION)
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'API key' })
    .addTag('agents-public-v1', 'Saved agents, sessions, inputs, turns, items and events')
    .addTag('files', 'File drafts: upload, read and delete files before they are attached to a session input with `yuxi.attachment_file_ids`; the bytes of a session\'s files (its inline images and attachments)')
    .addTag('admin', 'Agents, API keys and the audit trail (full-access callers; some for administrators only)')
    .addTag('operations', 'Health and Prometheus metrics, without credentials')
    .build();
  const document = SwaggerModule.createDocument(app, config, { extraModels: [
      MessageEventDto,
      CancelTurnEventDto,
      CancelInputEventDto,
      PromoteInputEventDto,
      ContinueQueueEventDto,
      ResumeEventDto,
      ToolResultEventDto,
      AnswerResponseDto,
      ApprovalResponseDto,
      FunctionToolDto,
      BuiltinToolDto,
      McpToolDto,
    ],
  });
  document.components = document.components ?? {};
  document.components.schemas = {
    ...document.components.schemas,
    ErrorCode: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'Stable error codes; see the API description for each.' },
    SessionEventType: { type: 'string', enum: Object.keys(EVENT_TYPES), description: 'SSE `event:` values; see the API description for each.' },
  };
  declareCommonResponses(document);
  declareStreamCreate(document);
  return document;
}

const ERROR_SCHEMA = { $ref: '#/components/schemas/ErrorResponseDto' };

/**
 * `POST /sessions` with `stream: true` answers 201 with the session's event stream instead of the
 * JSON resource: the long-lived subscription of 001, which does not end with the turn.
 */
function declareStreamCreate(document: OpenAPIObject): void {
  const created = document.paths['/api/v1/agents/sessions']?.post?.responses['201'] as { content?: Record<string, object>; description?: string } | undefined;
  if (!created?.content) return;
  created.content['text/event-stream'] = {
    schema: { type: 'string', description: 'SSE messages (`id:`, `event:`, `data:` with a SessionEvent JSON), starting with `agent.session.created`; the stream stays open across turns until the client closes it.' },
  };
}

/**
 * What every operation can answer whatever its handler does, declared once here rather than on
 * each route: the X-Request-Id header on every response; under /api, 429 (rate limits, checked
 * before the route) and 503 (a dependency down) with Retry-After where it is sent; 415 on every
 * operation that takes a JSON body.
 */
function declareCommonResponses(document: OpenAPIObject): void {
  const requestId = { description: 'The request id (echoes a caller-sent X-Request-Id); errors carry it as `error.request_id`.', schema: { type: 'string' } };
  const retryAfter = { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } };
  const error = (code: ErrorCode, headers: Record<string, object> = {}) => ({
    description: `\`${code}\`: ${ERROR_CODES[code].description}`,
    headers: { 'X-Request-Id': requestId, ...headers },
    content: { 'application/json': { schema: ERROR_SCHEMA } },
  });
  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'post', 'put', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (!operation) continue;
      if (path.startsWith('/api/')) {
        operation.responses['429'] ??= error('rate_limited', { 'Retry-After': retryAfter });
        operation.responses['503'] ??= error('service_unavailable');
      }
      if (operation.requestBody) operation.responses['415'] ??= error('unsupported_media_type');
      for (const [status, response] of Object.entries(operation.responses) as [string, { headers?: Record<string, object>; content?: Record<string, object> }][]) {
        // Errors are JSON even where the success is an event stream (refused before any SSE header).
        if (Number(status) >= 400 && path.startsWith('/api/')) response.content = { 'application/json': { schema: ERROR_SCHEMA } };
        response.headers = { 'X-Request-Id': requestId, ...(status === '429' ? { 'Retry-After': retryAfter } : {}), ...response.headers };
      }
    }
  }
}

/** Swagger UI at /docs and the generated document at /openapi.json. */
export function mountOpenApi(app: INestApplication): void {
  const document = buildOpenApiDocument(app);
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'openapi.json', customSiteTitle: 'Agents Public API' });
}
