// A small client of one api process for the fault suite: plain HTTP calls with a bounded time
// each (the test/support helpers read one fixed api from the environment), and an SSE tap that
// reconnects with Last-Event-ID when its connection is cut or goes silent.
import { randomUUID } from 'node:crypto';
import { createParser } from 'eventsource-parser';

export const API = '/api/v1/agents';

export interface HttpResult<T = any> {
  status: number;
  text: string;
  body: T;
  /** Wall time of the request, response body included. */
  ms: number;
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  idempotencyKey?: string;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

export function newKey(prefix = 'fault'): string {
  return `${prefix}-${randomUUID()}`;
}

export class Api {
  constructor(
    readonly baseUrl: string,
    readonly key: string,
  ) {}

  /** One HTTP call; rejects when no answer arrives within `timeoutMs` (default 15 s). */
  async request<T = any>(path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.key}`, ...options.headers };
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const method = options.method ?? (body ? 'POST' : 'GET');
    const timeoutMs = options.timeoutMs ?? 15_000;
    const t0 = performance.now();
    try {
      const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
      const text = await res.text();
      return { status: res.status, text, body: parseJson(text) as T, ms: performance.now() - t0 };
    } catch (error) {
      const ms = Math.round(performance.now() - t0);
      const reason = (error as Error)?.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `failed after ${ms} ms: ${String(error)}`;
      throw new Error(`${method} ${this.baseUrl}${path}: ${reason}`, { cause: error });
    }
  }

  async createSession(input?: unknown): Promise<any> {
    const res = await this.request(`${API}/sessions`, {
      body: input === undefined ? { agent_id: 'default-chatbot' } : { agent_id: 'default-chatbot', input },
      idempotencyKey: newKey('create'),
    });
    if (res.status !== 201) throw new Error(`create session failed: ${res.status} ${res.text}`);
    return res.body;
  }

  postEvent(sessionId: string, event: object, idempotencyKey = newKey('event'), timeoutMs?: number): Promise<HttpResult> {
    return this.request(`${API}/sessions/${sessionId}/events`, { body: { events: [event] }, idempotencyKey, timeoutMs });
  }

  /** A follow-up message. */
  sendMessage(sessionId: string, text: string, idempotencyKey = newKey('msg'), timeoutMs?: number): Promise<HttpResult> {
    return this.postEvent(sessionId, { type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text }, idempotencyKey, timeoutMs);
  }

  /** A follow-up message that must be accepted (202); returns the receipt. */
  async send(sessionId: string, text: string): Promise<any> {
    const res = await this.sendMessage(sessionId, text);
    if (res.status !== 202) throw new Error(`submit failed: ${res.status} ${res.text}`);
    return res.body;
  }

  session(sessionId: string): Promise<HttpResult> {
    return this.request(`${API}/sessions/${sessionId}`);
  }

  turn(sessionId: string, turnId: string): Promise<HttpResult> {
    return this.request(`${API}/sessions/${sessionId}/turns/${turnId}`);
  }

  async turns(sessionId: string): Promise<any[]> {
    const res = await this.request(`${API}/sessions/${sessionId}/turns?order=asc&limit=100`);
    if (res.status !== 200) throw new Error(`list turns failed: ${res.status} ${res.text}`);
    return res.body.data;
  }

  /**
   * GET …/events without consuming a stream: an event-stream answer is aborted at once (its
   * status and content type are what matter), any other answer is read as JSON.
   */
  async probeStream(sessionId: string, timeoutMs = 5_000): Promise<HttpResult & { contentType: string }> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const t0 = performance.now();
    try {
      const res = await fetch(`${this.baseUrl}${API}/sessions/${sessionId}/events`, {
        headers: { authorization: `Bearer ${this.key}`, accept: 'text/event-stream' },
        signal: controller.signal,
      });
      const contentType = res.headers.get('content-type') ?? '';
      if (contentType.startsWith('text/event-stream')) {
        controller.abort();
        return { status: res.status, text: '', body: undefined, ms: performance.now() - t0, contentType };
      }
      const text = await res.text();
      return { status: res.status, text, body: parseJson(text), ms: performance.now() - t0, contentType };
    } finally {
      clearTimeout(timer);
    }
  }

  input(sessionId: string, inputId: string): Promise<HttpResult> {
    return this.request(`${API}/sessions/${sessionId}/inputs/${inputId}`);
  }
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------------ SSE

export interface SseEvent {
  id: string;
  type: string;
  data: any;
  /** Which connection of the tap delivered it (1-based). */
  connection: number;
  receivedAt: number;
}

export interface ConnectAttempt {
  at: number;
  status: number | null;
  lastEventId: string | null;
  error?: string;
  body?: string;
}

export interface TapOptions {
  /** Reconnect (with Last-Event-ID) when the stream ends, fails or goes silent. */
  reconnect?: boolean;
  lastEventId?: string;
  /** A connection without a byte (event or heartbeat comment) for this long is cut. */
  idleMs?: number;
  /** Pause between connection attempts. */
  retryMs?: number;
  maxAttempts?: number;
}

/**
 * A subscription to one session's event stream. Events are collected in arrival order across
 * connections; `waitFor` resolves on the first collected event matching a predicate.
 */
export class EventTap {
  readonly events: SseEvent[] = [];
  readonly attempts: ConnectAttempt[] = [];
  connections = 0;
  lastEventId: string | null;
  ended = false;
  private closed = false;
  private current: AbortController | null = null;
  private waiters: { predicate: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }[] = [];
  private readonly options: Required<Omit<TapOptions, 'lastEventId'>>;

  private constructor(
    private readonly api: Api,
    readonly sessionId: string,
    options: TapOptions,
  ) {
    this.lastEventId = options.lastEventId ?? null;
    this.options = { reconnect: false, idleMs: 5_000, retryMs: 250, maxAttempts: 240, ...options };
  }

  /** Opens the tap; resolves once the first connection attempt has an answer (any status). */
  static async open(api: Api, sessionId: string, options: TapOptions = {}): Promise<EventTap> {
    const tap = new EventTap(api, sessionId, options);
    await new Promise<void>((resolve) => {
      void tap.run(resolve);
    });
    return tap;
  }

  /** The status of the first connection attempt. */
  get firstStatus(): number | null {
    return this.attempts[0]?.status ?? null;
  }

  private async run(firstAnswer: () => void): Promise<void> {
    try {
      for (let attempt = 1; !this.closed && attempt <= this.options.maxAttempts; attempt++) {
        const controller = new AbortController();
        this.current = controller;
        const record: ConnectAttempt = { at: Date.now(), status: null, lastEventId: this.lastEventId };
        this.attempts.push(record);
        try {
          const headers: Record<string, string> = { authorization: `Bearer ${this.api.key}`, accept: 'text/event-stream' };
          if (this.lastEventId) headers['last-event-id'] = this.lastEventId;
          const connectTimer = setTimeout(() => controller.abort(), 10_000);
          const res = await fetch(`${this.api.baseUrl}${API}/sessions/${this.sessionId}/events`, { headers, signal: controller.signal });
          clearTimeout(connectTimer);
          record.status = res.status;
          const type = res.headers.get('content-type') ?? '';
          if (res.status === 200 && type.startsWith('text/event-stream') && res.body) {
            this.connections += 1;
            firstAnswer();
            await this.pump(res.body, controller, this.connections);
          } else {
            record.body = (await res.text().catch(() => '')).slice(0, 500);
            firstAnswer();
          }
        } catch (error) {
          if (!this.closed) record.error = String(error);
          firstAnswer();
        }
        if (!this.options.reconnect || this.closed) break;
        await new Promise((resolve) => setTimeout(resolve, this.options.retryMs));
      }
    } finally {
      this.ended = true;
      firstAnswer();
    }
  }

  private async pump(body: ReadableStream<Uint8Array>, controller: AbortController, connection: number): Promise<void> {
    let lastByteAt = Date.now();
    const watchdog = setInterval(() => {
      if (Date.now() - lastByteAt > this.options.idleMs) controller.abort();
    }, 250);
    const parser = createParser({
      onEvent: (message) => {
        let data: any;
        try {
          data = JSON.parse(message.data);
        } catch {
          data = message.data;
        }
        const event: SseEvent = { id: message.id ?? '', type: message.event ?? 'message', data, connection, receivedAt: Date.now() };
        if (message.id) this.lastEventId = message.id;
        this.events.push(event);
        this.waiters = this.waiters.filter((w) => {
          if (!w.predicate(event)) return true;
          w.resolve(event);
          return false;
        });
      },
    });
    const decoder = new TextDecoder();
    try {
      for await (const chunk of body) {
        lastByteAt = Date.now();
        parser.feed(decoder.decode(chunk, { stream: true }));
      }
    } catch {
      // cut, aborted by the watchdog or by close()
    } finally {
      clearInterval(watchdog);
    }
  }

  waitFor(predicate: (e: SseEvent) => boolean, timeoutMs = 15_000, what = 'a matching event'): Promise<SseEvent> {
    const found = this.events.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = {
        predicate,
        resolve: (e: SseEvent) => {
          clearTimeout(timer);
          resolve(e);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        const seen = this.events.map((e) => e.type.replace(/^agent\.session\.|^yuxi\.session\./, '')).join(', ');
        const attempts = this.attempts.map((a) => a.status ?? a.error ?? '?').join(', ');
        reject(new Error(`SSE: no ${what} within ${timeoutMs} ms (connections=${this.connections}, attempts: ${attempts}); seen: ${seen}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  waitForType(type: string, turnId?: string, timeoutMs?: number): Promise<SseEvent> {
    return this.waitFor((e) => e.type === type && (turnId === undefined || e.data?.turn_id === turnId), timeoutMs, type);
  }

  ofType(type: string): SseEvent[] {
    return this.events.filter((e) => e.type === type);
  }

  close(): void {
    this.closed = true;
    this.current?.abort();
  }
}

export const isDelta = (e: SseEvent): boolean => e.type === 'agent.session.turn.output_text.delta';
