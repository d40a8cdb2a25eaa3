/**
 * Names for the generated types. Everything here is derived from `generated/schema.ts` (itself
 * generated from the OpenAPI document), by path and method rather than by schema name, so that a
 * renamed schema in the document changes nothing here: no DTO is written by hand.
 */
import type { components, paths } from './generated/schema.js';

export type { components, paths };

type Method = 'get' | 'post' | 'put' | 'delete';

/** The operation at a path and method of the document. */
export type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;

type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : never;

/** The JSON request body of an operation. */
export type RequestBody<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: infer R } ? JsonContent<NonNullable<R>> : never;

/** The JSON body of one response of an operation. */
export type ResponseBody<P extends keyof paths, M extends Method, S extends keyof Operation<P, M>['responses']> = JsonContent<Operation<P, M>['responses'][S]>;

/** The query parameters of an operation. */
export type QueryParams<P extends keyof paths, M extends Method> = NonNullable<Operation<P, M>['parameters']['query']>;

type SessionsPath = '/api/v1/agents/sessions';
type SessionPath = '/api/v1/agents/sessions/{session_id}';
type EventsPath = '/api/v1/agents/sessions/{session_id}/events';

export type Session = ResponseBody<SessionPath, 'get', 200>;
export type SessionList = ResponseBody<SessionsPath, 'get', 200>;
export type CreateSessionParams = RequestBody<SessionsPath, 'post'>;
/** `forked_from`: only the direct forks of that session (typed here until the generated document has the filter). */
export type ListSessionsParams = QueryParams<SessionsPath, 'get'> & { forked_from?: string };
export type UpdateSessionParams = RequestBody<SessionPath, 'post'>;
export type SessionDeleted = ResponseBody<SessionPath, 'delete', 200>;
/**
 * What `POST …/sessions/{id}/fork` takes (typed by hand until the generated document has the route):
 * the point, at most one of `after_turn_id` (a finished turn) and `before_turn_id` (edit and resend;
 * neither: after the latest finished turn); `title` and `metadata` replace the source's.
 */
export interface ForkSessionParams {
  after_turn_id?: string;
  before_turn_id?: string;
  title?: string;
  metadata?: Record<string, string>;
}
/** A fork's `yuxi.forked_from`: the session and turn it was forked from, and on which side of the turn (null on other sessions). */
export interface ForkedFrom {
  session_id: string;
  turn_id: string;
  position: 'after' | 'before';
}

/** What `POST …/events` takes: exactly one of these per request. */
export type InputEvent = RequestBody<EventsPath, 'post'>['events'][number];
export type InputEventOf<T extends InputEvent['type']> = Extract<InputEvent, { type: T }>;
/** A message: a string, or up to 20 ordered user messages. */
export type MessageInput = InputEventOf<'agent.session.input.message'>['input'];
export type MessageOptions = NonNullable<InputEventOf<'agent.session.input.message'>['yuxi']>;
export type ResumeResponse = InputEventOf<'yuxi.session.input.resume'>['response'];

/** The durable acceptance of a submitted event (202), also what `…/receipt` finds. */
export type Receipt = ResponseBody<EventsPath, 'post', 202>;
export type Queue = ResponseBody<'/api/v1/agents/sessions/{session_id}/queue', 'get', 200>;
export type InputDetail = ResponseBody<'/api/v1/agents/sessions/{session_id}/inputs/{input_id}', 'get', 200>;
export type SessionState = ResponseBody<'/api/v1/agents/sessions/{session_id}/state', 'get', 200>;
export type PageParams = QueryParams<'/api/v1/agents/sessions/{session_id}/turns', 'get'>;
export type TurnList = ResponseBody<'/api/v1/agents/sessions/{session_id}/turns', 'get', 200>;
export type TurnSummary = TurnList['data'][number];
export type Turn = ResponseBody<'/api/v1/agents/sessions/{session_id}/turns/{turn_id}', 'get', 200>;
export type TurnStatus = Turn['status'];
export type ItemList = ResponseBody<'/api/v1/agents/sessions/{session_id}/items', 'get', 200>;
export type Item = ItemList['data'][number];
export type Run = ResponseBody<'/api/v1/agents/sessions/{session_id}/runs/{run_id}', 'get', 200>;
type TracesPath = '/api/v1/agents/sessions/{session_id}/traces';
/** One page of a session's traces: one entry per turn with stored spans, `otlp` an OTLP JSON ExportTraceServiceRequest. */
export type SessionTraceList = ResponseBody<TracesPath, 'get', 200>;
export type SessionTrace = SessionTraceList['data'][number];
export type ListSessionTracesParams = QueryParams<TracesPath, 'get'>;
/** What a session stores: its own rows per table with their bytes, its files and its workspace (`GET …/storage`). */
export type SessionStorage = ResponseBody<'/api/v1/agents/sessions/{session_id}/storage', 'get', 200>;
type ProjectsPath = '/api/v1/agents/projects';
type ProjectPath = '/api/v1/agents/projects/{project_id}';

export type Project = ResponseBody<ProjectPath, 'get', 200>;
export type ProjectList = ResponseBody<ProjectsPath, 'get', 200>;
export type ProjectDeleted = ResponseBody<ProjectPath, 'delete', 200>;
export type CreateProjectParams = RequestBody<ProjectsPath, 'post'>;
export type ListProjectsParams = QueryParams<ProjectsPath, 'get'>;
/** What a project's sessions store, as the storage accounting last measured them (`GET …/projects/{id}/storage`). */
export type ProjectStorage = ResponseBody<'/api/v1/agents/projects/{project_id}/storage', 'get', 200>;
/** The product's private file routes (user tokens only): a draft's pre-parse (OCR) and an image thumbnail. */
export type ParsedFile = ResponseBody<'/api/agent/files/{file_id}/parse', 'post', 200>;
export type ParsedPage = ParsedFile['pages'][number];
export type CreateThumbnailParams = RequestBody<'/api/agent/images', 'post'>;
export type Thumbnail = ResponseBody<'/api/agent/images', 'post', 200>;
// Webhook endpoints of the caller, their delivery log, and the bodies they receive.
type WebhooksPath = '/api/v1/agents/webhooks';
type WebhookPath = '/api/v1/agents/webhooks/{webhook_id}';
type WebhookDeliveriesPath = '/api/v1/agents/webhooks/{webhook_id}/deliveries';
export type WebhookEndpoint = ResponseBody<WebhookPath, 'get', 200>;
/** An endpoint with its signing `secret`: only the create and a rotation answer it. */
export type WebhookEndpointWithSecret = ResponseBody<WebhooksPath, 'post', 201>;
export type WebhookEndpointList = ResponseBody<WebhooksPath, 'get', 200>;
export type WebhookEndpointDeleted = ResponseBody<WebhookPath, 'delete', 200>;
type CreateWebhookBody = RequestBody<WebhooksPath, 'post'>;
/** `enabled` defaults to true (the generated type makes a field with a default required). */
export type CreateWebhookParams = Omit<CreateWebhookBody, 'enabled'> & Partial<Pick<CreateWebhookBody, 'enabled'>>;
export type UpdateWebhookParams = RequestBody<WebhookPath, 'post'>;
export type ListWebhooksParams = QueryParams<WebhooksPath, 'get'>;
export type WebhookDelivery = ResponseBody<'/api/v1/agents/webhooks/{webhook_id}/test', 'post', 202>;
export type WebhookDeliveryList = ResponseBody<WebhookDeliveriesPath, 'get', 200>;
export type ListWebhookDeliveriesParams = QueryParams<WebhookDeliveriesPath, 'get'>;
export type WebhookAttempt = WebhookDelivery['attempts'][number];
export type WebhookEventType = WebhookDelivery['event_type'];
type WebhookPayloadSchema = Exclude<Extract<keyof components['schemas'], `Webhook${string}Payload`>, 'WebhookPayload'>;
/**
 * The JSON body of a webhook delivery (what `verifyWebhook` returns, given this type): a union of
 * the document's payload schemas (`WebhookPayload`'s members), narrowed by `type`.
 */
export type WebhookPayload = components['schemas'][WebhookPayloadSchema];
export type WebhookPayloadOf<T extends WebhookEventType> = Extract<WebhookPayload, { type: T }>;
export type AgentList = ResponseBody<'/api/v1/agents', 'get', 200>;
export type Agent = ResponseBody<'/api/v1/agents/{agent_id}', 'get', 200>;

/** The one error shape of the API. */
export type ErrorBody = ResponseBody<SessionPath, 'get', 404>;
export type ErrorCode = ErrorBody['error']['code'];
/** One field of a 422 (`details.fields`): where, and what is wrong with it. */
export type FieldError = NonNullable<ErrorBody['error']['details']['fields']>[number];

/** An event of the session stream (`GET …/events`): a union narrowed by `type`. */
export type SessionEvent = components['schemas']['SessionEvent'];
export type SessionEventType = SessionEvent['type'];
export type SessionEventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;

/** Who the credential is (`GET /api/v1/me`). */
export type Caller = ResponseBody<'/api/v1/me', 'get', 200>;
/** What the deployment tells a console (`GET /api/v1/console/settings`). */
export type ConsoleSettings = ResponseBody<'/api/v1/console/settings', 'get', 200>;

// The administration and operator API (`/api/v1/admin/…`): roles decide who may call what.
type AdminSessionsPath = '/api/v1/admin/sessions';
export type AdminSessionList = ResponseBody<AdminSessionsPath, 'get', 200>;
export type AdminSession = ResponseBody<'/api/v1/admin/sessions/{session_id}', 'get', 200>;
export type SearchSessionsParams = QueryParams<AdminSessionsPath, 'get'>;
/** What the admin events route takes: the control events only. */
export type ControlEvent = RequestBody<'/api/v1/admin/sessions/{session_id}/events', 'post'>['events'][number];
export type SessionTimeline = ResponseBody<'/api/v1/admin/sessions/{session_id}/timeline', 'get', 200>;
export type TimelineTurn = SessionTimeline['data'][number];
export type TimelineParams = QueryParams<'/api/v1/admin/sessions/{session_id}/timeline', 'get'>;
type ModelRequestsPath = '/api/v1/admin/sessions/{session_id}/runs/{run_id}/model-requests';
/** A run's exact model requests (administrators with a user token only). */
export type ModelRequestList = ResponseBody<ModelRequestsPath, 'get', 200>;
export type ModelRequestRecord = ModelRequestList['data'][number];
export type ModelRequestsParams = QueryParams<ModelRequestsPath, 'get'>;
export type BulkCancelParams = RequestBody<'/api/v1/admin/sessions/bulk-cancel', 'post'>;
export type BulkCancelResult = ResponseBody<'/api/v1/admin/sessions/bulk-cancel', 'post', 200>;
/** What each owner (or owner's project) stores, largest first (`GET /api/v1/admin/storage`). */
export type StorageTotalList = ResponseBody<'/api/v1/admin/storage', 'get', 200>;
export type StorageTotal = StorageTotalList['data'][number];
export type StorageTotalsParams = QueryParams<'/api/v1/admin/storage', 'get'>;
export type WaitpointInbox = ResponseBody<'/api/v1/admin/waitpoints', 'get', 200>;
export type InboxWaitpoint = WaitpointInbox['data'][number];
export type WaitpointInboxParams = QueryParams<'/api/v1/admin/waitpoints', 'get'>;
export type QueueStatus = ResponseBody<'/api/v1/admin/queues', 'get', 200>;
export type AdminAgentList = ResponseBody<'/api/v1/admin/agents', 'get', 200>;
type PutAgentBody = RequestBody<'/api/v1/admin/agents/{agent_id}', 'put'>;
/** What `putAgent` takes. `tool_approval_mode` (`default`), `tool_approval_pinned` (`false`) and `visibility` (`public`) may be left out (the generated type makes a field with a default required). */
type DefaultedAgentFields = 'tool_approval_mode' | 'tool_approval_pinned' | 'visibility';
export type AgentDefinition = Omit<PutAgentBody, DefaultedAgentFields> & Partial<Pick<PutAgentBody, DefaultedAgentFields>>;
export type AdminAgent = ResponseBody<'/api/v1/admin/agents/{agent_id}', 'put', 200>;
export type AgentDeleted = ResponseBody<'/api/v1/admin/agents/{agent_id}', 'delete', 200>;
export type AgentVersionList = ResponseBody<'/api/v1/admin/agents/{agent_id}/versions', 'get', 200>;
export type AgentVersion = AgentVersionList['data'][number];
export type AgentVersionsParams = QueryParams<'/api/v1/admin/agents/{agent_id}/versions', 'get'>;
export type ApiKeyList = ResponseBody<'/api/v1/admin/api-keys', 'get', 200>;
export type ApiKey = ApiKeyList['data'][number];
export type CreateApiKeyParams = RequestBody<'/api/v1/admin/api-keys', 'post'>;
export type ApiKeyCreated = ResponseBody<'/api/v1/admin/api-keys', 'post', 201>;
export type ApiKeyRevoked = ResponseBody<'/api/v1/admin/api-keys/{key_id}', 'delete', 200>;
export type SecretList = ResponseBody<'/api/v1/admin/secrets', 'get', 200>;
export type Secret = SecretList['data'][number];
export type SecretScope = NonNullable<QueryParams<'/api/v1/admin/secrets', 'get'>['scope']>;
export type SecretDeleted = ResponseBody<'/api/v1/admin/secrets/{name}', 'delete', 200>;
export type AuditList = ResponseBody<'/api/v1/admin/audit', 'get', 200>;
export type AuditEntry = AuditList['data'][number];
export type AuditParams = QueryParams<'/api/v1/admin/audit', 'get'>;
export type UserList = ResponseBody<'/api/v1/admin/users', 'get', 200>;
export type User = UserList['data'][number];
export type ListUsersParams = QueryParams<'/api/v1/admin/users', 'get'>;
export type UserRole = RequestBody<'/api/v1/admin/users/{user_id}/role', 'put'>['role'];

// Parts of the responses above, named for the console (still derived from the document).
export type SessionStatus = Session['status'];
export type CurrentTurn = NonNullable<Session['yuxi']['current_turn']>;
/** What a turn waits at (question, approval, client_tool, cooperation). */
export type Waitpoint = NonNullable<CurrentTurn['waitpoint']>;
export type Usage = NonNullable<TimelineTurn['usage']>;
export type TimelineRun = TimelineTurn['runs'][number];
export type TimelineStep = TimelineRun['steps'][number];
export type TimelineMember = SessionTimeline['members'][number];
export type CooperationState = NonNullable<SessionState['agent_state']['cooperation']>;
export type WaitpointKind = InboxWaitpoint['kind'];
