import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { createParser } from 'eventsource-parser';
import { env } from '../support/env.js';
import { API, createSession, sendMessage } from '../support/http.js';
import { scrape, total } from '../support/metrics.js';
import { SseStream } from '../support/sse.js';

const CUT_METRIC = 'yuxi_sse_slow_readers_cut_total';
/** At most this many large turns are sent before the test gives up on seeing the cut. */
const MAX_TURNS = 12;

/**
 * About 700 KB of text in 140 words of digits (digits keep the worker's tokenizer fast). The user
 * message's item.added and item.done each carry it whole, so a turn puts ~1.4 MB on every stream
 * however it ends: with this much text it ends `failed` (more than the scripted model's window),
 * which is as good as any ending here: only the events on the stream matter. Each event stays
 * below the server's 1 MiB bound, so the witness, which reads, is never the one cut.
 */
function bigText(turn: number): string {
  return Array.from({ length: 140 }, (_, i) => `${turn}${String(i).padStart(3, '0')}`.padEnd(5000, '7')).join(' ');
}

const TURN_ENDS = new Set(['agent.session.turn.completed', 'agent.session.turn.failed']);

interface RawEvent {
  id: string;
  type: string;
  eventId: string;
}

/**
 * An SSE client on a bare TCP socket that can stop reading: paused, the kernel's buffers fill and
 * the server's own buffer grows, as with a client on a slow link or a stuck consumer.
 */
class RawSseClient {
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

  constructor(sessionId: string) {
    const url = new URL(env.apiUrl);
    this.socket = net.connect(Number(url.port), url.hostname);
    this.socket.write(`GET ${API}/sessions/${sessionId}/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${env.apiKey}\r\nAccept: text/event-stream\r\n\r\n`);
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

/** The events up to and including the first that matches. */
function upTo<T>(events: T[], last: (e: T) => boolean): T[] {
  const at = events.findIndex(last);
  assert.notEqual(at, -1);
  return events.slice(0, at + 1);
}

describe('SSE backpressure', () => {
  it('cuts a client that stops reading with a retry: hint, and a resume from its last id loses no event', { timeout: 180_000 }, async () => {
    const session = await createSession();
    const witness = await SseStream.open(session.id);
    const slow = new RawSseClient(session.id);
    try {
      await slow.until('agent.session.created');
      assert.match(slow.status, /^HTTP\/1\.1 200 /);
      slow.stopReading();
      const cutsBefore = total(await scrape(env.apiUrl), CUT_METRIC);

      // Large turns, one after the other, until the api reports the cut; each has ended on the
      // witness (a client that reads) before the next is sent. The kernel's socket buffers take
      // a few MB before the api's own buffer grows.
      const endedTurns = new Set<string>();
      let lastTurnId: string | null = null;
      let cut = false;
      for (let turn = 0; turn < MAX_TURNS && !cut; turn += 1) {
        const accepted = await sendMessage(session.id, bigText(turn));
        assert.equal(accepted.status, 202);
        const ended = await witness.waitFor((e) => TURN_ENDS.has(e.type) && !endedTurns.has(e.data.turn_id as string), 60_000);
        lastTurnId = ended.data.turn_id as string;
        endedTurns.add(lastTurnId);
        cut = total(await scrape(env.apiUrl), CUT_METRIC) > cutsBefore;
      }
      assert.ok(cut, `the stream of a client that does not read was cut within ${MAX_TURNS} turns of ~1.4 MB`);

      // The slow client reads again: what was buffered for it, the retry: hint, then the end.
      await slow.readToEnd();
      assert.equal(slow.retry, 1000, 'the cut stream ends with a retry: hint');
      const last = slow.events.at(-1);
      assert.ok(last, 'the slow client got events before it was cut');
      assert.ok(slow.events.length < witness.events.length, 'the slow client was cut before the end of the turns');

      // It resumes from the last id it received, as EventSource would with Last-Event-ID.
      const resumed = await SseStream.open(session.id, { lastEventId: last.id });
      try {
        await resumed.waitFor((e) => TURN_ENDS.has(e.type) && e.data.turn_id === lastTurnId, 60_000);
        assert.ok(!resumed.events.some((e) => e.type === 'yuxi.session.resync'), 'no resync: nothing was lost');
        // Compared up to the last turn's completion: what follows it may still be on its way to either.
        const isEnd = (type: string, turnId: unknown): boolean => TURN_ENDS.has(type) && turnId === lastTurnId;
        const resumedIds = upTo(resumed.events, (e) => isEnd(e.type, e.data.turn_id)).map((e) => e.data.event_id as string);
        const witnessIds = upTo(witness.events, (e) => isEnd(e.type, e.data.turn_id)).map((e) => e.data.event_id as string);
        assert.deepEqual([...slow.events.map((e) => e.eventId), ...resumedIds], witnessIds, 'the cut stream and its resumption together are exactly the uninterrupted stream');
      } finally {
        resumed.close();
      }
    } finally {
      slow.destroy();
      witness.close();
    }
  });
});
