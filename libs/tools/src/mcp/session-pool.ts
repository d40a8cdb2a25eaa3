import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AppConfig } from '#libs/config';
import { metrics } from '#libs/metrics';
import type { McpToolDeclaration, ToolCallContext } from '../tool.types.js';
import { credentialsKey, McpAuth } from './auth.js';
import type { CallDeadline } from './call-deadline.js';
import { elicitationUrlProblem } from './elicitation.js';
import { McpHeaderBox } from './header-box.js';
import { McpOutbound } from './outbound.js';
import { LinearSchemaValidator } from '../schema-cache.js';

const CLIENT_INFO = { name: 'yuxi-agents-worker', version: '1.0.0' };
/** How long ending a session waits for a cancelled call's notice to be posted, and for the DELETE. */
const CANCEL_NOTICE_MS = 1_000;
const TERMINATE_MS = 2_000;

/**
 * One MCP session of this worker with one server under one set of credentials: an initialized
 * client and its Streamable HTTP transport (which carries the `Mcp-Session-Id`). A session runs at
 * most one tool call at a time (`call`), so a request the server sends back in the middle of a
 * call (sampling, elicitation) belongs to that call without guessing.
 */
export class McpSession {
  /** The tool call in flight on this session (null: idle or listing). */
  call: ToolCallContext | null = null;
  /** Its deadline, paused while the server waits for the user. */
  deadline: CallDeadline | null = null;
  /** Set once the session cannot be used again (the server forgot it, the connection broke). */
  broken = false;
  /** `notifications/cancelled` posts still on their way: ending the session waits for them (bounded). */
  readonly notices = new Set<Promise<unknown>>();
  lastUsed = Date.now();

  constructor(
    readonly key: string,
    readonly client: Client,
    readonly transport: StreamableHTTPClientTransport,
  ) {}

  get id(): string | undefined {
    return this.transport.sessionId;
  }
}

/** Why a session could not be used: the server no longer knows it (the request was refused, so it did not run). */
export class McpSessionLostError extends Error {
  constructor(cause: unknown) {
    super('the MCP server no longer knows this session', { cause });
    this.name = 'McpSessionLostError';
  }
}

/**
 * The worker's MCP sessions, kept open between calls and runs: a call takes an idle session of its
 * server and credentials (or initialises one) and gives it back when done, so a server that keeps
 * state in its session keeps it, and a call pays no handshake. Idle sessions end after
 * MCP_SESSION_IDLE_MS (with the DELETE the spec asks for); at most MCP_MAX_SESSIONS are held.
 */
@Injectable()
export class McpSessionPool implements OnApplicationShutdown {
  private readonly logger = new Logger(McpSessionPool.name);
  /** Idle sessions by key, most recently used last. */
  private readonly idle = new Map<string, McpSession[]>();
  private readonly busy = new Set<McpSession>();
  private readonly listChanged = new Set<(key: string) => void>();
  private sweeper: NodeJS.Timeout | null = null;
  private readonly headerBox: McpHeaderBox;
  private closing = false;

  constructor(
    private readonly config: AppConfig,
    private readonly auth: McpAuth,
    private readonly outbound: McpOutbound,
  ) {
    this.headerBox = new McpHeaderBox(config.secretsKey);
  }

  /** The key of a server under the credentials a declaration names (the reference, never a secret's value). */
  keyOf(decl: McpToolDeclaration): string {
    return credentialsKey(decl);
  }

  /** Called with the key of a server that said its tool list changed (`notifications/tools/list_changed`). */
  onListChanged(listener: (key: string) => void): void {
    this.listChanged.add(listener);
  }

  /**
   * Runs `work` on a session of the declaration's server, of `scope` when given: a tool call's
   * sessions belong to its agent session (`ToolCallContext.sessionId`), so what a server keeps in
   * its MCP session (a browser, a memory, a workspace) never passes from one user's conversation
   * to another's even where the credentials are the same; listings, stateless, share one scope.
   * When the server refuses the session
   * (it restarted and forgot it: 404, or 400 as some servers answer), the refused request never
   * ran, so it is sent once more on a freshly initialised session. Any other failure ends the
   * session (the next call initialises a new one) and is rethrown.
   */
  async use<T>(decl: McpToolDeclaration, options: RequestOptions, work: (session: McpSession) => Promise<T>, scope?: string): Promise<T> {
    const key = scope === undefined ? this.keyOf(decl) : JSON.stringify([this.keyOf(decl), scope]);
    for (let attempt = 0; ; attempt += 1) {
      // A retry never takes another idle session: those of a server that forgot one are as stale.
      const reused = attempt === 0 ? this.takeIdle(key) : undefined;
      const session = reused ?? (await this.open(decl, key, options, attempt > 0 ? 'reinitialized' : 'new'));
      let failed = true;
      try {
        const result = await work(session);
        failed = false;
        return result;
      } catch (error) {
        if (attempt === 0 && isSessionLost(error, session)) {
          this.dropIdle(session.key);
          this.logger.log(`MCP server "${decl.server_label}" forgot session ${session.id}: initialising a new one`);
          continue;
        }
        // A call the caller gave up on (cancel, deadline) ends its session too: the server may run
        // on and send requests (sampling, elicitation) on the call's stream, which must never reach
        // the next call. Ending it waits for the cancel notice to be posted.
        throw isSessionLost(error, session) ? new McpSessionLostError(error) : error;
      } finally {
        this.giveBack(session, failed);
      }
    }
  }

  /** Ends every session (DELETE to each server, bounded), so servers free their state. */
  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    if (this.sweeper) clearInterval(this.sweeper);
    const all = [...this.busy, ...[...this.idle.values()].flat()];
    this.busy.clear();
    this.idle.clear();
    await Promise.all(all.map((session) => this.end(session)));
  }

  /** How many sessions this worker holds (in use and idle). */
  get size(): number {
    let idle = 0;
    for (const list of this.idle.values()) idle += list.length;
    return idle + this.busy.size;
  }

  private takeIdle(key: string): McpSession | undefined {
    const list = this.idle.get(key);
    let session = list?.pop();
    while (session?.broken) {
      void this.end(session);
      session = list?.pop();
    }
    if (list && list.length === 0) this.idle.delete(key);
    if (session) this.busy.add(session);
    return session;
  }

  private async open(decl: McpToolDeclaration, key: string, options: RequestOptions, reason: 'new' | 'reinitialized'): Promise<McpSession> {
    // The transport is made before its session; its fetch finds the session through this.
    const ref: { session?: McpSession } = {};
    // Credentials from a named secret are read as each request leaves (a rotation reaches this
    // open session); the call in flight's idempotency key rides every request of the session.
    // Every request (the server's, its OAuth discovery and token requests, the DELETE) goes through
    // the outbound address policy.
    const guarded = this.outbound.fetchFor(decl);
    const { fetch: authFetch, ...auth } = this.auth.transportOptions(decl, guarded);
    const authorised = authFetch ?? guarded;
    const transport = new StreamableHTTPClientTransport(new URL(decl.server_url), {
      // Static header values are sealed at rest (header-box.ts): opened here, as the requests leave.
      requestInit: { headers: this.headerBox.headers(decl) },
      ...auth,
      fetch: (url, init) => authorised(url, withIdempotencyKey(init, ref.session?.call?.idempotencyKey)),
      // A broken stream is not retried for long: the call's outcome is then unknown and the
      // caller is told so at once, rather than after the tool timeout.
      reconnectionOptions: { maxRetries: 1, initialReconnectionDelay: 500, maxReconnectionDelay: 1_000, reconnectionDelayGrowFactor: 1 },
    });
    const client = new Client(CLIENT_INFO, {
      // Sampling only where the declaration says so: otherwise the server is not offered the model.
      capabilities: { ...(decl.sampling === true ? { sampling: {} } : {}), elicitation: { form: {}, url: {} } },
      // Output schemas come from the server: their patterns run on the linear engine.
      jsonSchemaValidator: new LinearSchemaValidator(),
      listChanged: { tools: { autoRefresh: false, debounceMs: 0, onChanged: () => this.listChanged.forEach((listener) => listener(key)) } },
    });
    const session = new McpSession(key, client, transport);
    ref.session = session;
    // The SDK posts an aborted call's notifications/cancelled without waiting for it: the session
    // keeps the post, so that ending the session never aborts it (the server would run the call on).
    const send = transport.send.bind(transport);
    transport.send = (message, sendOptions) => {
      const sent = send(message, sendOptions);
      if ('method' in message && message.method === 'notifications/cancelled') {
        const notice = sent.catch(() => undefined).finally(() => session.notices.delete(notice));
        session.notices.add(notice);
      }
      return sent;
    };
    installServerRequestHandlers(session, decl.sampling === true);
    // A stream that cannot be resumed (the server forgot the session, or cannot be reached again)
    // ends the session: closing it fails the requests still waiting on it (a call's outcome is then
    // unknown, and said so) instead of leaving them to a timeout. Deferred a turn of the event loop,
    // so that a refused POST rejects with its own error first (the pool retries those).
    transport.onerror = (error) => {
      if (!isSessionLost(error, session) && !/Maximum reconnection attempts/.test(String(error))) return;
      session.broken = true;
      setTimeout(() => void client.close().catch(() => undefined), 0);
    };
    this.busy.add(session);
    try {
      await client.connect(transport, options);
    } catch (error) {
      this.busy.delete(session);
      await client.close().catch(() => undefined);
      throw error;
    }
    metrics.mcpSessionOpened(reason, this.size);
    this.ensureSweeper();
    return session;
  }

  private giveBack(session: McpSession, failed: boolean): void {
    this.busy.delete(session);
    session.call = null;
    session.deadline = null;
    session.lastUsed = Date.now();
    if (failed || session.broken || this.closing) {
      void this.end(session);
      return;
    }
    const list = this.idle.get(session.key) ?? [];
    list.push(session);
    this.idle.set(session.key, list);
    this.evictOverLimit();
    metrics.mcpSessionsHeld(this.size);
  }

  /** Over the limit: the least recently used idle sessions end. */
  private evictOverLimit(): void {
    let excess = this.size - this.config.mcpMaxSessions;
    if (excess <= 0) return;
    const idle = [...this.idle.values()].flat().sort((a, b) => a.lastUsed - b.lastUsed);
    for (const session of idle) {
      if (excess-- <= 0) break;
      this.forget(session);
      void this.end(session);
    }
  }

  private dropIdle(key: string): void {
    const list = this.idle.get(key) ?? [];
    this.idle.delete(key);
    for (const session of list) {
      session.broken = true;
      void this.end(session);
    }
  }

  private forget(session: McpSession): void {
    const list = this.idle.get(session.key);
    if (!list) return;
    const index = list.indexOf(session);
    if (index >= 0) list.splice(index, 1);
    if (list.length === 0) this.idle.delete(session.key);
  }

  private ensureSweeper(): void {
    if (this.sweeper) return;
    const every = Math.max(1_000, Math.min(60_000, Math.floor(this.config.mcpSessionIdleMs / 2)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }

  private sweep(): void {
    const cutoff = Date.now() - this.config.mcpSessionIdleMs;
    for (const session of [...this.idle.values()].flat()) {
      if (session.lastUsed > cutoff && !session.broken) continue;
      this.forget(session);
      void this.end(session);
    }
    metrics.mcpSessionsHeld(this.size);
  }

  /** Ends a session: DELETE (the spec's way to let the server free it; bounded), then close. */
  private async end(session: McpSession): Promise<void> {
    if (session.notices.size > 0) await Promise.race([Promise.all(session.notices), delay(CANCEL_NOTICE_MS)]);
    if (!session.broken) {
      await Promise.race([session.transport.terminateSession().catch(() => undefined), delay(TERMINATE_MS)]);
    }
    await session.client.close().catch(() => undefined);
    metrics.mcpSessionsHeld(this.size);
  }
}

/**
 * The server asks the client something in the middle of a call: the call in flight on this
 * session answers it (its context's `sample` and `elicit`); without one (or without the hook) the
 * request is refused, which the server reports to its tool as an error.
 */
function installServerRequestHandlers(session: McpSession, sampling: boolean): void {
  if (sampling) {
    session.client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      const sample = session.call?.sample;
      if (!sample) throw new McpError(ErrorCode.InvalidRequest, 'sampling is not available outside a tool call of an agent');
      return sample(request.params, extra.signal);
    });
  }
  session.client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const elicit = session.call?.elicit;
    if (!elicit) return { action: 'decline' };
    // A link shown to the user to open: https only (no javascript:, data:, file: or plain http).
    const refused = elicitationUrlProblem(request.params);
    if (refused) throw new McpError(ErrorCode.InvalidParams, refused);
    // The user may take minutes: the call's deadline waits with them.
    const deadline = session.deadline;
    deadline?.pause();
    try {
      return await elicit(request.params, extra.signal);
    } finally {
      deadline?.resume();
    }
  });
}

function withIdempotencyKey(init: RequestInit | undefined, key: string | undefined): RequestInit | undefined {
  if (!key) return init;
  const headers = new Headers(init?.headers);
  headers.set('Idempotency-Key', key);
  return { ...init, headers };
}

/** The server refused our session id: 404 as the spec says, or 400 as some servers answer an unknown one. */
function isSessionLost(error: unknown, session: McpSession): boolean {
  return error instanceof StreamableHTTPError && session.id !== undefined && (error.code === 404 || error.code === 400);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
