import { createParser } from 'eventsource-parser';
import { env } from './env.js';
import { API } from './http.js';

export interface SseEvent {
  id: string;
  type: string;
  data: any;
  /** Size of the SSE message on the wire (its id, event and data lines), in bytes. */
  bytes: number;
}

/**
 * A real SSE subscription over fetch. Events are collected in order; `waitFor` resolves on the
 * first collected event matching a predicate (no sleeps: it waits on the stream itself).
 */
export class SseStream {
  readonly events: SseEvent[] = [];
  status = 0;
  contentType = '';
  private readonly controller = new AbortController();
  private waiters: { predicate: (e: SseEvent) => boolean; resolve: (e: SseEvent) => void }[] = [];
  private ended = false;
  private endError: unknown = null;

  /** `baseUrl`: another api than the suite's (one a test started itself). */
  static async open(sessionId: string, options: { lastEventId?: string; key?: string; baseUrl?: string } = {}): Promise<SseStream> {
    const headers: Record<string, string> = { authorization: `Bearer ${options.key ?? env.apiKey}`, accept: 'text/event-stream' };
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    return SseStream.request(`${API}/sessions/${sessionId}/events`, { headers }, options.baseUrl);
  }

  /** Any request whose answer may be an event stream (a stream=true create, say). */
  static async request(path: string, init: RequestInit, baseUrl = env.apiUrl): Promise<SseStream> {
    const stream = new SseStream();
    const res = await fetch(`${baseUrl}${path}`, { ...init, signal: stream.controller.signal });
    stream.status = res.status;
    stream.contentType = res.headers.get('content-type') ?? '';
    if (!stream.contentType.startsWith('text/event-stream') || !res.body) {
      stream.bodyText = await res.text();
      stream.ended = true;
      return stream;
    }
    void stream.pump(res.body);
    return stream;
  }

  bodyText = '';

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const parser = createParser({
      onEvent: (message) => {
        const bytes = Buffer.byteLength(`id: ${message.id ?? ''}\nevent: ${message.event ?? ''}\ndata: ${message.data}\n\n`);
        const event: SseEvent = { id: message.id ?? '', type: message.event ?? 'message', data: JSON.parse(message.data), bytes };
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
      for await (const chunk of body) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch (error) {
      this.endError = error;
    } finally {
      this.ended = true;
    }
  }

  waitFor(predicate: (e: SseEvent) => boolean, timeoutMs = 15_000): Promise<SseEvent> {
    const found = this.events.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const seen = this.events.map((e) => e.type).join(', ');
        reject(new Error(`no matching SSE event within ${timeoutMs} ms (ended=${this.ended}, error=${String(this.endError)}); seen: ${seen}`));
      }, timeoutMs);
      this.waiters.push({
        predicate,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      });
    });
  }

  waitForType(type: string, turnId?: string, timeoutMs?: number): Promise<SseEvent> {
    return this.waitFor((e) => e.type === type && (turnId === undefined || e.data.turn_id === turnId), timeoutMs);
  }

  close(): void {
    this.controller.abort();
  }
}
