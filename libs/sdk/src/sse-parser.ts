/** One dispatched server-sent event. */
export interface SseMessage {
  /** The `id:` in effect for this message (the stream's last event id), if any was sent. */
  id: string | undefined;
  /** The `event:` field, or "message". */
  event: string;
  data: string;
}

export type SseRecord = { kind: 'message'; message: SseMessage } | { kind: 'retry'; ms: number };

/**
 * Parses a text/event-stream body as the HTML standard defines it (lines ended by CRLF, LF or CR;
 * `:` comments; `data:` lines joined with LF; `id:` kept across messages; `retry:` digits only).
 * Yields each message when its blank line arrives, and each valid `retry:` when it is read, so a
 * message cut off by the connection is never half-delivered.
 */
export async function* parseSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseRecord> {
  const decoder = new TextDecoder('utf-8');
  const parser = new SseLineParser();
  for await (const chunk of body) {
    yield* parser.feed(decoder.decode(chunk, { stream: true }));
  }
  yield* parser.feed(decoder.decode());
}

/** The state machine behind parseSse, fed text in arbitrary pieces. */
export class SseLineParser {
  private buffer = '';
  private first = true;
  /** A CR ended the last piece: an LF starting the next one belongs to it. */
  private pendingCr = false;
  private lastEventId: string | undefined = undefined;
  private event = '';
  private data: string[] = [];

  *feed(text: string): Generator<SseRecord> {
    if (this.first && text.length > 0) {
      this.first = false;
      if (text.startsWith('\uFEFF')) text = text.slice(1);
    }
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buffer += text;
    let start = 0;
    for (;;) {
      const end = nextLineEnd(this.buffer, start);
      if (end === -1) break;
      const line = this.buffer.slice(start, end);
      if (this.buffer[end] === '\r') {
        if (end + 1 === this.buffer.length) this.pendingCr = true;
        start = this.buffer[end + 1] === '\n' ? end + 2 : end + 1;
      } else {
        start = end + 1;
      }
      yield* this.line(line);
    }
    this.buffer = this.buffer.slice(start);
  }

  private *line(line: string): Generator<SseRecord> {
    if (line === '') {
      if (this.data.length > 0) {
        yield { kind: 'message', message: { id: this.lastEventId, event: this.event || 'message', data: this.data.join('\n') } };
      }
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    else if (field === 'id' && !value.includes('\0')) this.lastEventId = value;
    else if (field === 'retry' && /^\d+$/.test(value)) yield { kind: 'retry', ms: Number(value) };
  }
}

function nextLineEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || c === 13) return i;
  }
  return -1;
}
