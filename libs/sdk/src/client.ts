import { AdminResource } from './admin.js';
import { AutomationsResource } from './automations.js';
import { AgentsApiError } from './errors.js';
import { paginate } from './paginate.js';
import { SessionEventStream, type SessionEventsOptions, type SessionReader } from './session-events.js';
import { type CallOptions, type ClientOptions, type Query, Transport, type WriteOptions } from './transport.js';
import type { UsageReport, UsageReportParams } from './usage.js';
import { WebhooksResource } from './webhook-endpoints.js';
import type { Agent, AgentList, Caller, ConsoleSettings, CreateProjectParams, CreateSessionParams, ForkSessionParams, InputDetail, InputEvent, InputEventOf, Item, ItemList, ListProjectsParams, ListSessionsParams, MessageInput, MessageOptions, PageParams, Project, ProjectDeleted, ProjectList, ProjectStorage, Queue, Receipt, Run, Session, SessionDeleted, SessionList, SessionState, SessionStorage, SessionTrace, SessionTraceList, ListSessionTracesParams, Turn, TurnList, UpdateSessionParams } from './types.js';

const SESSIONS = '/api/v1/agents/sessions';
const PROJECTS = '/api/v1/agents/projects';

// Paging and the webhook endpoints live in paginate.ts and webhook-endpoints.ts; the package's entry point exports them from here as before.
export { paginate } from './paginate.js';
export { WebhooksResource } from './webhook-endpoints.js';

/** `/api/v1/agents/sessions/{id}/…` with every id encoded. */
function sessionPath(sessionId: string, ...rest: string[]): string {
  return [SESSIONS, sessionId, ...rest].map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join('/');
}

/** A key for one logical submission; every retry of it sends the same. */
function newIdempotencyKey(): string {
  return `sdk-${crypto.randomUUID()}`;
}

export type SendMessageOptions = WriteOptions & MessageOptions;
/** `ifMatch`: the session revision the update is conditional on. */
export type UpdateOptions = CallOptions & { ifMatch?: number };
export type CancelTarget = NonNullable<InputEventOf<'agent.session.input.cancel'>['yuxi']>;
export type ResumeParams = Omit<InputEventOf<'yuxi.session.input.resume'>, 'type'>;
export type ToolResultParams = Omit<InputEventOf<'tool_result'>, 'type'>;

/** Sessions and everything under them: inputs and events, queue, turns, items, runs. */
export class SessionsResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Creates a session, empty or with its first input. The response's `yuxi.receipt` holds the
   * input's acceptance (`input_id`). A lost answer is retried with the same Idempotency-Key,
   * which returns the original session (the create is replayed, not looked up).
   */
  create(params: Omit<CreateSessionParams, 'stream'>, options: WriteOptions = {}): Promise<Session> {
    return this.transport.request({ method: 'POST', path: SESSIONS, body: params, idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(), signal: options.signal });
  }

  /**
   * Forks a session: a new session (a root of its own, same agent and configuration) whose history
   * is the source's up to the point, shared rather than copied, then its own. `after_turn_id` names a
   * finished turn, `before_turn_id` any started one (edit and resend); neither: after the latest
   * finished turn. The response's `yuxi.forked_from` names the source and the point; the source's
   * forks are `list({ forked_from: sessionId })`. A lost answer is retried with the same
   * Idempotency-Key (generated when none is given), which returns the same fork.
   */
  fork(sessionId: string, params: ForkSessionParams = {}, options: WriteOptions = {}): Promise<Session> {
    return this.transport.request({ method: 'POST', path: sessionPath(sessionId, 'fork'), body: params, idempotencyKey: options.idempotencyKey ?? newIdempotencyKey(), signal: options.signal });
  }

  /** `metadata` filters on labels: sessions holding every given pair (sent as `metadata[key]=value`). */
  list(params: ListSessionsParams = {}, options: CallOptions = {}): Promise<SessionList> {
    const { metadata, ...rest } = params;
    const query: Query = { ...(rest as Query) };
    for (const [key, value] of Object.entries(metadata ?? {})) query[`metadata[${key}]`] = value;
    return this.transport.request({ method: 'GET', path: SESSIONS, query, signal: options.signal });
  }

  /** Every session matching the filters, page after page. */
  listAll(params: Omit<ListSessionsParams, 'after'> = {}, options: CallOptions = {}): AsyncGenerator<Session> {
    return paginate((after) => this.list({ ...params, after, limit: params.limit ?? 100 }, options));
  }

  get(sessionId: string, options: CallOptions = {}): Promise<Session> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId), signal: options.signal });
  }

  /**
   * Title, pin, read state, metadata (replaced whole), and the model and approval mode of inputs
   * received from now on. `ifMatch`: the `yuxi.revision` you last read; the update then applies
   * only at that revision, else it fails with 412 `revision_mismatch` (re-read and reapply).
   */
  update(sessionId: string, params: UpdateSessionParams, options: UpdateOptions = {}): Promise<Session> {
    const headers = options.ifMatch === undefined ? undefined : { 'if-match': `"${options.ifMatch}"` };
    return this.transport.request({ method: 'POST', path: sessionPath(sessionId), body: params, headers, signal: options.signal });
  }

  /**
   * Soft-deletes a session (a cooperation root with its tree): everything under it is 404 from then
   * on and its files are removed. 409 `state_conflict` while a turn is active or inputs are pending.
   * Idempotent: a retry after a lost answer gets the same answer.
   */
  delete(sessionId: string, options: CallOptions = {}): Promise<SessionDeleted> {
    return this.transport.request({ method: 'DELETE', path: sessionPath(sessionId), signal: options.signal });
  }

  archive(sessionId: string, options: CallOptions = {}): Promise<Session> {
    return this.transport.request({ method: 'POST', path: sessionPath(sessionId, 'archive'), signal: options.signal });
  }

  /**
   * Submits one input or control event. The receipt proves durable acceptance only. When the
   * answer is lost on the way, the receipt is looked up with the same key before anything is sent
   * again, so an event is accepted once however the network behaves:
   * - with a key the SDK generated (no `idempotencyKey` given), unique to this call, a receipt found
   *   is this call's: it is returned as is;
   * - with your own `idempotencyKey`, a receipt found only says the key was used, perhaps by another
   *   submission (the lookup does not compare intents): the event is sent again at once with the
   *   same key, and the server answers for it: the stored receipt when it is the same intent, or
   *   409 `idempotency_conflict` when the key stands for another one.
   *
   * Not found yet: the event is sent again after the backoff, with the same key.
   */
  submitEvent(sessionId: string, event: InputEvent, options: WriteOptions = {}): Promise<Receipt> {
    const ownKey = options.idempotencyKey === undefined;
    const key = options.idempotencyKey ?? newIdempotencyKey();
    return this.transport.request<Receipt>({
      method: 'POST',
      path: sessionPath(sessionId, 'events'),
      body: { events: [event] },
      idempotencyKey: key,
      signal: options.signal,
      recover: async (signal) => {
        const found = await this.findReceipt(sessionId, key, signal);
        if (found === undefined) return { kind: 'not_found' };
        return ownKey ? { kind: 'answer', value: found } : { kind: 'resend' };
      },
    });
  }

  /** A message (`mode`: follow_up queues FIFO, steer runs first; omitted: chosen by the server). */
  sendMessage(sessionId: string, input: MessageInput, options: SendMessageOptions = {}): Promise<Receipt> {
    const { idempotencyKey, signal, ...yuxi } = options;
    const event: InputEvent = { type: 'agent.session.input.message', input, ...(Object.keys(yuxi).length > 0 ? { yuxi } : {}) };
    return this.submitEvent(sessionId, event, { idempotencyKey, signal });
  }

  /** Cancels the current turn, or the one named (optionally only while `expected_run_id` is its run). */
  cancel(sessionId: string, target: CancelTarget = {}, options: WriteOptions = {}): Promise<Receipt> {
    const event: InputEvent = { type: 'agent.session.input.cancel', ...(Object.keys(target).length > 0 ? { yuxi: target } : {}) };
    return this.submitEvent(sessionId, event, options);
  }

  /** Answers a question waitpoint or decides an approval one; the turn continues in a new run. */
  resume(sessionId: string, params: ResumeParams, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'yuxi.session.input.resume', ...params }, options);
  }

  /** The result of one client-executed tool call of a `client_tool` waitpoint. */
  toolResult(sessionId: string, params: ToolResultParams, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'tool_result', ...params }, options);
  }

  /** Removes a pending input from the queue. */
  cancelInput(sessionId: string, inputId: string, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'yuxi.session.input.cancel_input', input_id: inputId }, options);
  }

  /** Turns a pending follow-up into a steer. */
  promoteInput(sessionId: string, inputId: string, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'yuxi.session.input.promote', input_id: inputId }, options);
  }

  /** Unpauses the queue after a cancelled or failed turn. */
  continueQueue(sessionId: string, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'yuxi.session.input.continue' }, options);
  }

  /**
   * Compacts the session's context now (a manual compaction): queued like a follow-up, its turn's
   * only output is the `compaction` item; `instructions` are added to the summary prompt.
   */
  compact(sessionId: string, params: { instructions?: string } = {}, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'yuxi.session.input.compact', ...params }, options);
  }

  /**
   * Stops the whole cooperation tree of `sessionId` (any session of it): every active turn is
   * cancelled, every queue paused. The tree's state is `state(…).agent_state.cooperation`.
   */
  stopTree(sessionId: string, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'yuxi.session.tree.stop' }, options);
  }

  /** Continues a stopped tree once its work has settled (409 `state_conflict` before): its queues resume. */
  continueTree(sessionId: string, options: WriteOptions = {}): Promise<Receipt> {
    return this.submitEvent(sessionId, { type: 'yuxi.session.tree.continue' }, options);
  }

  /** The receipt of an earlier submission by its Idempotency-Key. 404 only means "not found yet". */
  receipt(sessionId: string, idempotencyKey: string, options: CallOptions = {}): Promise<Receipt> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'receipt'), query: { idempotency_key: idempotencyKey }, signal: options.signal });
  }

  queue(sessionId: string, options: CallOptions = {}): Promise<Queue> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'queue'), signal: options.signal });
  }

  input(sessionId: string, inputId: string, options: CallOptions = {}): Promise<InputDetail> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'inputs', inputId), signal: options.signal });
  }

  state(sessionId: string, options: CallOptions = {}): Promise<SessionState> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'state'), signal: options.signal });
  }

  turns(sessionId: string, page: PageParams = {}, options: CallOptions = {}): Promise<TurnList> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'turns'), query: page as Query, signal: options.signal });
  }

  turn(sessionId: string, turnId: string, options: CallOptions = {}): Promise<Turn> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'turns', turnId), signal: options.signal });
  }

  /** One page of the session's items, or of one turn's with `turnId`. */
  items(sessionId: string, page: PageParams & { turnId?: string } = {}, options: CallOptions = {}): Promise<ItemList> {
    const { turnId, ...query } = page;
    const path = turnId === undefined ? sessionPath(sessionId, 'items') : sessionPath(sessionId, 'turns', turnId, 'items');
    return this.transport.request({ method: 'GET', path, query: query as Query, signal: options.signal });
  }

  /** Every item of the session (or of one turn), oldest first unless `order: 'desc'`. */
  allItems(sessionId: string, params: { turnId?: string; order?: PageParams['order'] } = {}, options: CallOptions = {}): AsyncGenerator<Item> {
    return paginate((after) => this.items(sessionId, { turnId: params.turnId, order: params.order ?? 'asc', limit: 100, after }, options));
  }

  /**
   * One page of the session's traces: one entry per turn whose trace has stored spans (`id` is the
   * turn's id, the cursor), its spans as OTLP JSON (`otlp.resourceSpans`), newest first by default.
   * Empty while the server does not trace. A page is at most 16 MiB (`yuxi.truncated` marks a trace
   * cut to fit).
   */
  traces(sessionId: string, page: ListSessionTracesParams = {}, options: CallOptions = {}): Promise<SessionTraceList> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'traces'), query: page as Query, signal: options.signal });
  }

  /** Every trace of the session, newest first unless `order: 'asc'`. */
  allTraces(sessionId: string, params: { order?: ListSessionTracesParams['order'] } = {}, options: CallOptions = {}): AsyncGenerator<SessionTrace> {
    return paginate((after) => this.traces(sessionId, { order: params.order, limit: 20, after }, options));
  }

  /**
   * What the session stores: its own rows per table (items, events, inputs, turns, runs, steps,
   * model requests) with their bytes, its files and its workspace, and `total_bytes`.
   */
  storage(sessionId: string, options: CallOptions = {}): Promise<SessionStorage> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'storage'), signal: options.signal });
  }

  run(sessionId: string, runId: string, options: CallOptions = {}): Promise<Run> {
    return this.transport.request({ method: 'GET', path: sessionPath(sessionId, 'runs', runId), signal: options.signal });
  }

  /**
   * The session's events as an async iterable that reconnects, dedupes, handles resyncs and (with
   * `untilTurnId` or `untilInputId`) ends with the turn. See SessionEventStream.
   */
  events(sessionId: string, options: SessionEventsOptions = {}): SessionEventStream {
    const reader: SessionReader = {
      transport: this.transport,
      turn: (id, turnId, signal) => this.turn(id, turnId, { signal }),
      input: (id, inputId, signal) => this.input(id, inputId, { signal }),
      currentTurnId: async (id, signal) => (await this.get(id, { signal })).yuxi.current_turn?.id ?? null,
      allTurnItems: async (id, turnId, signal) => {
        const items: Item[] = [];
        for await (const item of this.allItems(id, { turnId }, { signal })) items.push(item);
        return items;
      },
    };
    return new SessionEventStream(reader, sessionId, options);
  }

  private async findReceipt(sessionId: string, key: string, signal: AbortSignal | undefined): Promise<Receipt | undefined> {
    try {
      return await this.transport.request<Receipt>({ method: 'GET', path: sessionPath(sessionId, 'receipt'), query: { idempotency_key: key }, signal, maxRetries: 0 });
    } catch (error) {
      if (error instanceof AgentsApiError && error.status === 404) return undefined;
      throw error;
    }
  }
}

/**
 * Projects: named groups of the caller's sessions that share one workdir (pass a project's `id`
 * as `project_id` to `sessions.create`).
 */
export class ProjectsResource {
  constructor(private readonly transport: Transport) {}

  /**
   * Creates a project. Not retried after a lost answer: the create takes no Idempotency-Key, so
   * sending it again could make a second project (list the projects to find out).
   */
  create(params: CreateProjectParams, options: CallOptions = {}): Promise<Project> {
    return this.transport.request({ method: 'POST', path: PROJECTS, body: params, signal: options.signal, maxRetries: 0 });
  }

  list(params: ListProjectsParams = {}, options: CallOptions = {}): Promise<ProjectList> {
    return this.transport.request({ method: 'GET', path: PROJECTS, query: params as Query, signal: options.signal });
  }

  /** Every project of the caller, page after page. */
  listAll(params: Omit<ListProjectsParams, 'after'> = {}, options: CallOptions = {}): AsyncGenerator<Project> {
    return paginate((after) => this.list({ ...params, after, limit: params.limit ?? 100 }, options));
  }

  get(projectId: string, options: CallOptions = {}): Promise<Project> {
    return this.transport.request({ method: 'GET', path: `${PROJECTS}/${encodeURIComponent(projectId)}`, signal: options.signal });
  }

  /** What the project's sessions store, as the storage accounting last measured them (lags by its interval). */
  storage(projectId: string, options: CallOptions = {}): Promise<ProjectStorage> {
    return this.transport.request({ method: 'GET', path: `${PROJECTS}/${encodeURIComponent(projectId)}/storage`, signal: options.signal });
  }

  /**
   * Soft-deletes a project: its sessions keep their history, take no new messages. A retry after a
   * lost answer may find it deleted already (404 `not_found`).
   */
  delete(projectId: string, options: CallOptions = {}): Promise<ProjectDeleted> {
    return this.transport.request({ method: 'DELETE', path: `${PROJECTS}/${encodeURIComponent(projectId)}`, signal: options.signal });
  }
}

export class AgentsResource {
  constructor(private readonly transport: Transport) {}

  list(options: CallOptions = {}): Promise<AgentList> {
    return this.transport.request({ method: 'GET', path: '/api/v1/agents', signal: options.signal });
  }

  get(agentId: string, options: CallOptions = {}): Promise<Agent> {
    return this.transport.request({ method: 'GET', path: `/api/v1/agents/${encodeURIComponent(agentId)}`, signal: options.signal });
  }
}

/**
 * A client of the Agents Public API.
 *
 * ```ts
 * const client = new AgentsClient({ baseUrl: 'http://localhost:3000', apiKey: '<an API key>' });
 * ```
 */
export class AgentsClient {
  readonly sessions: SessionsResource;
  readonly projects: ProjectsResource;
  readonly agents: AgentsResource;
  /** The caller's webhook endpoints and their delivery log. */
  readonly webhooks: WebhooksResource;
  /** The caller's automations (agents started by a clock) and their invocations. */
  readonly automations: AutomationsResource;
  /** The administration and operator API (`/api/v1/admin/…`); the caller's role decides what answers. */
  readonly admin: AdminResource;
  private readonly transport: Transport;

  constructor(options: ClientOptions) {
    const transport = new Transport(options);
    this.transport = transport;
    this.sessions = new SessionsResource(transport);
    this.projects = new ProjectsResource(transport);
    this.agents = new AgentsResource(transport);
    this.webhooks = new WebhooksResource(transport);
    this.automations = new AutomationsResource(transport);
    this.admin = new AdminResource(transport);
  }

  /** Who the credential is: user, key, access level, app, role. */
  me(options: CallOptions = {}): Promise<Caller> {
    return this.transport.request({ method: 'GET', path: '/api/v1/me', signal: options.signal });
  }

  /** The deployment's settings for a console: where a trace opens (TRACE_URL_TEMPLATE). */
  consoleSettings(options: CallOptions = {}): Promise<ConsoleSettings> {
    return this.transport.request({ method: 'GET', path: '/api/v1/console/settings', signal: options.signal });
  }

  /** The caller's usage (tokens, calls, cost), grouped by day, agent, model, session, project, app or end user. */
  usage(params: UsageReportParams = {}, options: CallOptions = {}): Promise<UsageReport> {
    return this.transport.request({ method: 'GET', path: '/api/v1/agents/usage', query: params as Query, signal: options.signal });
  }
}
