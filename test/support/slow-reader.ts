import assert from 'node:assert/strict';
import net from 'node:net';
import { createParser } from 'eventsource-parser';
import { env } from './env.js';
import { API, sendMessage } from './http.js';
import { scrape, total } from './metrics.js';
import type { SseStream } from './sse.js';

export const CUT_METRIC = 'yuxi_sse_slow_readers_cut_total';
/** At most this many large turns are sent before the test gives up on seeing the cut. */
const MAX_TURNS = 36;

/**
 * About 250 KB of text in 50 words of dashes (under MAX_INPUT_TEXT_BYTES; dashes are ~64 characters
 * a token, so the turn stays inside the scripted model's window and completes). The scripted model
 * echoes it one word per delta, and deltas carry their text whole; the user message's and the
 * answer's item events carry at most EVENT_ITEM_CONTENT_BYTES (64 KiB) each. So a turn puts
 * ~0.57 MB on every stream. Each event stays below the server's 1 MiB bound, so the witness, which
 * reads, is never the one cut.
 */
function bigText(turn: number): string {
  return Array.from({ length: 50 }, (_, i) => `${turn}${String(i).padStart(3, '0')}`.padEnd(5000, '-')).join(' ');
}

export const TURN_ENDS = new Set(['agent.session.turn.completed', 'agent.session.turn.failed']);

export interface RawEvent {
  id: string;
  type: string;
  eventId: string;
}

/**
 * An SSE client on a bare TCP socket that can stop reading: paused, the kernel's buffers fill and
 * the server's own buffer grows, as with a client on a slow link or a stuck consumer.
 */
export class RawSseClient {
  readonly events: RawEvent[] = [];
  retry: number | null = null;
  ended = false;
  private readonly socket: net.Socket;
  private readonly parser = createParser({
    onEvent: (message) => this.events.push({ id: message.id ?? '', type: message.event ?? 'message', eventId: (JSON.parse(message.data) as { event_id: string }).event_id }),
    onRetry: (retry) => (this.retry = retry),
  });
  private head = '';
  private inBody = false;
  private readonly decoder = new TextDecoder();
  private readonly closed: Promise<void>;
  private waiter: (() => void) | null = null;

  constructor(sessionId: string, key = env.apiKey, baseUrl = env.apiUrl) {
    const url = new URL(baseUrl);
    this.socket = net.connect(Number(url.port), url.hostname);
    this.socket.write(`GET ${API}/sessions/${sessionId}/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`);
    this.socket.on('data', (chunk: Buffer) => this.feed(chunk));
    this.closed = new Promise((resolve) =>
      this.socket.once('close', () => {
        this.ended = true;
        resolve();
      }),
    );
  }

  get status(): string {
    return this.head.split('\r\n')[0] ?? '';
  }

  private feed(chunk: Buffer): void {
    let text = this.decoder.decode(chunk, { stream: true });
    if (!this.inBody) {
      this.head += text;
      const end = this.head.indexOf('\r\n\r\n');
      if (end === -1) return;
      text = this.head.slice(end + 4);
      this.head = this.head.slice(0, end);
      this.inBody = true;
    }
    this.parser.feed(text);
    this.waiter?.();
  }

  /** Reads until an event of `type` arrived (bounded by the test's own timeout). */
  async until(type: string): Promise<void> {
    while (!this.events.some((e) => e.type === type)) {
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  stopReading(): void {
    this.socket.pause();
  }

  /** Reads everything the server still sends, until it closes the connection. */
  async readToEnd(): Promise<void> {
    this.socket.resume();
    await this.closed;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * Sends large turns one after the other, each ended on `witness` (a client that reads) before the
 * next, until the api reports a slow reader cut (the kernel's socket buffers take a few MB before
 * the api's own buffer grows). Returns the turns in order; fails when no cut came.
 */
export async function turnsUntilCut(sessionId: string, witness: SseStream): Promise<string[]> {
  const cutsBefore = total(await scrape(env.apiUrl), CUT_METRIC);
  const turns: string[] = [];
  for (let turn = 0; turn < MAX_TURNS; turn += 1) {
    const accepted = await sendMessage(sessionId, bigText(turn));
    assert.equal(accepted.status, 202);
    const ended = await witness.waitFor((e) => TURN_ENDS.has(e.type) && !turns.includes(e.data.turn_id as string), 60_000);
    turns.push(ended.data.turn_id as string);
    if (total(await scrape(env.apiUrl), CUT_METRIC) > cutsBefore) return turns;
  }
  assert.fail(`the stream of a client that does not read was not cut within ${MAX_TURNS} turns of ~0.57 MB`);
}
