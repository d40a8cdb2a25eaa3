import { type CallOptions, type Query, Transport, type WriteOptions } from './transport.js';
import type { AdminUsageReportParams, UsageReport } from './usage.js';
import type {
  AdminAgent,
  AdminAgentList,
  AdminSession,
  AdminSessionList,
  AgentDefinition,
  AgentDeleted,
  AgentVersionList,
  AgentVersionsParams,
  ApiKeyCreated,
  ApiKeyList,
  ApiKeyRevoked,
  AuditList,
  AuditParams,
  BulkCancelParams,
  BulkCancelResult,
  ControlEvent,
  CreateApiKeyParams,
  ListUsersParams,
  ModelRequestList,
  ModelRequestsParams,
  QueueStatus,
  Receipt,
  SearchSessionsParams,
  Secret,
  SecretDeleted,
  SecretList,
  SecretScope,
  StorageTotalList,
  StorageTotalsParams,
  SessionTimeline,
  TimelineParams,
  User,
  UserList,
  UserRole,
  WaitpointInbox,
  WaitpointInboxParams,
} from './types.js';

const ADMIN = '/api/v1/admin';

function adminPath(...parts: string[]): string {
  return [ADMIN, ...parts.map(encodeURIComponent)].join('/');
}

/** A key for one logical submission; every retry of it sends the same. */
function newIdempotencyKey(): string {
  return `sdk-${crypto.randomUUID()}`;
}

/**
 * Every owner's sessions, for `viewer`s (reads), `operator`s and `admin`s (also control events and
 * bulk cancel). A product user without a role gets 403 `forbidden` on each.
 */
export class AdminSessionsResource {
  constructor(private readonly transport: Transport) {}

  /** Cross-owner search: filters, `q` on the title, cursor pages (newest first by default). */
  search(params: SearchSessionsParams = {}, options: CallOptions = {}): Promise<AdminSessionList> {
    return this.transport.request({ method: 'GET', path: adminPath('sessions'), query: params as Query, signal: options.signal });
  }

  get(sessionId: string, options: CallOptions = {}): Promise<AdminSession> {
    return this.transport.request({ method: 'GET', path: adminPath('sessions', sessionId), signal: options.signal });
  }

  /** One page of the session's turns with their runs and steps (model calls, tool calls, waitpoints, compactions) and members. */
  timeline(sessionId: string, params: TimelineParams = {}, options: CallOptions = {}): Promise<SessionTimeline> {
    return this.transport.request({ method: 'GET', path: adminPath('sessions', sessionId, 'timeline'), query: params as Query, signal: options.signal });
  }

  /**
   * The exact request each model call of a run sent, in step order (recorded only where the
   * deployment sets MODEL_REQUEST_AUDIT=on; the timeline's `model_requests` says). Only for an
   * administrator signed in with a user token: an API key gets 403 `user_token_required`, any
   * other role 403 `forbidden`. Every page read is audited.
   */
  modelRequests(sessionId: string, runId: string, params: ModelRequestsParams = {}, options: CallOptions = {}): Promise<ModelRequestList> {
    return this.transport.request({ method: 'GET', path: adminPath('sessions', sessionId, 'runs', runId, 'model-requests'), query: params as Query, signal: options.signal });
  }

  /**
   * A control event on any owner's session, as its owner would send it (audited under the
   * operator). The admin route has no receipt lookup of its own: after a lost answer the event is
   * sent again with the same key, and the server answers the stored receipt.
   */
  submitEvent(sessionId: string, event: ControlEvent, options: WriteOptions = {}): Promise<Receipt> {
    return this.transport.request<Receipt>({
      method: 'POST',
      path: adminPath('sessions', sessionId, 'events'),
      body: { events: [event] },
      idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(),
      signal: options.signal,
      recover: async () => ({ kind: 'resend' }),
    });
  }

  /** Counts (`dry_run: true`) or cancels the active turns of the sessions the filter selects. */
  bulkCancel(params: BulkCancelParams, options: WriteOptions = {}): Promise<BulkCancelResult> {
    return this.transport.request<BulkCancelResult>({
      method: 'POST',
      path: adminPath('sessions', 'bulk-cancel'),
      body: params,
      idempotencyKey: params.dry_run ? options.idempotencyKey : (options.idempotencyKey ?? newIdempotencyKey()),
      signal: options.signal,
      recover: async () => ({ kind: 'resend' }),
    });
  }
}

/** The administration API: saved agents, API keys, users and roles, the audit trail, the operator reads. */
export class AdminResource {
  readonly sessions: AdminSessionsResource;

  constructor(private readonly transport: Transport) {
    this.sessions = new AdminSessionsResource(transport);
  }

  /** The inbox: open waitpoints across every owner's sessions. */
  waitpoints(params: WaitpointInboxParams = {}, options: CallOptions = {}): Promise<WaitpointInbox> {
    return this.transport.request({ method: 'GET', path: adminPath('waitpoints'), query: params as Query, signal: options.signal });
  }

  /** Queue depths, the oldest waiting input, live workers, runs held and taken over. */
  queues(options: CallOptions = {}): Promise<QueueStatus> {
    return this.transport.request({ method: 'GET', path: adminPath('queues'), signal: options.signal });
  }

  /** Every owner's usage, grouped (operators and administrators). */
  usage(params: AdminUsageReportParams = {}, options: CallOptions = {}): Promise<UsageReport> {
    return this.transport.request({ method: 'GET', path: adminPath('usage'), query: params as Query, signal: options.signal });
  }

  /** What each owner (`by: 'owner'`) or owner's project (`by: 'project'`) stores, largest first, as last measured (viewers, operators and administrators). */
  storage(params: StorageTotalsParams = {}, options: CallOptions = {}): Promise<StorageTotalList> {
    return this.transport.request({ method: 'GET', path: adminPath('storage'), query: params as Query, signal: options.signal });
  }

  listAgents(options: CallOptions = {}): Promise<AdminAgentList> {
    return this.transport.request({ method: 'GET', path: adminPath('agents'), signal: options.signal });
  }

  /** Creates or replaces an agent (a replacement gets the next version; the same definition again changes nothing). */
  putAgent(agentId: string, definition: AgentDefinition, options: CallOptions = {}): Promise<AdminAgent> {
    return this.transport.request({ method: 'PUT', path: adminPath('agents', agentId), body: definition, signal: options.signal });
  }

  deleteAgent(agentId: string, options: CallOptions = {}): Promise<AgentDeleted> {
    return this.transport.request({ method: 'DELETE', path: adminPath('agents', agentId), signal: options.signal });
  }

  /** An agent's version history (each definition as written, who and when), newest first by default; cursor pages by version. Administrators only. */
  agentVersions(agentId: string, params: AgentVersionsParams = {}, options: CallOptions = {}): Promise<AgentVersionList> {
    return this.transport.request({ method: 'GET', path: adminPath('agents', agentId, 'versions'), query: params as Query, signal: options.signal });
  }

  listApiKeys(options: CallOptions = {}): Promise<ApiKeyList> {
    return this.transport.request({ method: 'GET', path: adminPath('api-keys'), signal: options.signal });
  }

  /**
   * Creates a key; the answer carries its secret, shown this once. Not retried after a lost
   * answer: the create takes no Idempotency-Key (list the keys to find out, revoke a stray one).
   */
  createApiKey(params: CreateApiKeyParams, options: CallOptions = {}): Promise<ApiKeyCreated> {
    return this.transport.request({ method: 'POST', path: adminPath('api-keys'), body: params, signal: options.signal, maxRetries: 0 });
  }

  revokeApiKey(keyId: string, options: CallOptions = {}): Promise<ApiKeyRevoked> {
    return this.transport.request({ method: 'DELETE', path: adminPath('api-keys', keyId), signal: options.signal });
  }

  /** Named secrets' names and versions, never values: the caller's own (`own`, the default) or the shared ones (`shared`, administrators). */
  listSecrets(scope: SecretScope = 'own', options: CallOptions = {}): Promise<SecretList> {
    return this.transport.request({ method: 'GET', path: adminPath('secrets'), query: { scope }, signal: options.signal });
  }

  /** Creates a named secret or rotates its value (the next `version`); MCP tools reference it by name in `auth`. Safe to repeat. */
  putSecret(name: string, value: string, scope: SecretScope = 'own', options: CallOptions = {}): Promise<Secret> {
    return this.transport.request({ method: 'PUT', path: adminPath('secrets', name), query: { scope }, body: { value }, signal: options.signal });
  }

  deleteSecret(name: string, scope: SecretScope = 'own', options: CallOptions = {}): Promise<SecretDeleted> {
    return this.transport.request({ method: 'DELETE', path: adminPath('secrets', name), query: { scope }, signal: options.signal });
  }

  audit(params: AuditParams = {}, options: CallOptions = {}): Promise<AuditList> {
    return this.transport.request({ method: 'GET', path: adminPath('audit'), query: params as Query, signal: options.signal });
  }

  users(params: ListUsersParams = {}, options: CallOptions = {}): Promise<UserList> {
    return this.transport.request({ method: 'GET', path: adminPath('users'), query: params as Query, signal: options.signal });
  }

  setUserRole(userId: string, role: UserRole, options: CallOptions = {}): Promise<User> {
    return this.transport.request({ method: 'PUT', path: adminPath('users', userId, 'role'), body: { role }, signal: options.signal });
  }

  /** Refuses every key and token of a product user from their next request on, on every replica (administrators). */
  suspendUser(userId: string, options: CallOptions = {}): Promise<User> {
    return this.transport.request({ method: 'POST', path: adminPath('users', userId, 'suspend'), signal: options.signal });
  }

  /** Ends a suspension: the user's unrevoked, unexpired keys and tokens work again (administrators). */
  reactivateUser(userId: string, options: CallOptions = {}): Promise<User> {
    return this.transport.request({ method: 'POST', path: adminPath('users', userId, 'reactivate'), signal: options.signal });
  }
}
