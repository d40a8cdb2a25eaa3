import { StringDecoder } from 'node:string_decoder';

/** Past this many bytes of output (kept and dropped together) a command is ended: it floods, and reading it costs the worker. */
export function floodBytes(outputBytes: number): number {
  return Math.max(64 * 1024 * 1024, 64 * outputBytes);
}

/**
 * A command's output, kept up to `limit` bytes (whole UTF-8 characters: a character the bound
 * falls inside is dropped), then counted and dropped, so that memory stays bounded whatever the
 * command prints. Each `push` answers the text kept from that chunk (to stream live); `flood` says
 * when so much was printed that the command should be ended.
 */
export class BoundedOutput {
  private readonly decoder = new StringDecoder('utf8');
  private readonly parts: string[] = [];
  private keptBytes = 0;
  private totalBytes = 0;
  private full = false;
  private readonly notes: string[] = [];

  constructor(
    private readonly limit: number,
    private readonly floodLimit = floodBytes(limit),
  ) {}

  /** The text of `chunk` that is kept ('' once the bound is reached). */
  push(chunk: Buffer): string {
    this.totalBytes += chunk.length;
    if (this.full) return '';
    const room = this.limit - this.keptBytes;
    let take = chunk;
    if (chunk.length > room) {
      this.full = true;
      take = chunk.subarray(0, utf8Boundary(chunk, room));
    }
    const text = this.decoder.write(take);
    // The decoder holds an incomplete character back; it is counted once it is written.
    this.keptBytes += take.length;
    if (text !== '') this.parts.push(text);
    return text;
  }

  /** The bytes printed, kept or not. */
  get printed(): number {
    return this.totalBytes;
  }

  get flooding(): boolean {
    return this.totalBytes > this.floodLimit;
  }

  /** Adds a line said after the output (the cut, a limit hit); answers the text added, to stream it too. */
  note(line: string): string {
    const text = `${this.notes.length === 0 && !this.endsWithNewline() ? '\n' : ''}[${line}]\n`;
    this.notes.push(text);
    return text;
  }

  /** The note saying the output was cut, when it was ('' otherwise). */
  cutNote(): string {
    if (!this.full) return '';
    return this.note(`output cut at ${this.limit} bytes: ${this.totalBytes - this.keptBytes} more bytes were dropped`);
  }

  /** The kept output, then the notes. */
  text(): string {
    return this.parts.join('') + this.notes.join('');
  }

  /** The kept output (without the notes). */
  kept(): string {
    return this.parts.join('');
  }

  private endsWithNewline(): boolean {
    const last = this.parts.at(-1);
    return last === undefined || last.endsWith('\n');
  }
}

/** The largest length <= `max` that does not split a UTF-8 character of `bytes`. */
export function utf8Boundary(bytes: Buffer, max: number): number {
  if (max >= bytes.length) return bytes.length;
  let end = Math.max(0, max);
  // Step back over continuation bytes (10xxxxxx) to the start of the character the bound splits.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  return end;
}
