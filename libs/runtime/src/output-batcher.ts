import { REAL_CLOCK, type ThrottleClock } from './progress-throttle.js';

/** A command's live output is sent at most this often (while it writes less than OUTPUT_BATCH_BYTES). */
export const OUTPUT_BATCH_MS = 100;
/** Held output at least this large (UTF-8 bytes) is sent at once rather than at the interval's end. */
export const OUTPUT_BATCH_BYTES = 4 * 1024;

/**
 * Joins a command's output chunks (one per pipe read: a chatty command makes thousands a second)
 * into fewer live events: what comes is held and sent together OUTPUT_BATCH_MS after the first held
 * chunk, or at once when the held output reaches OUTPUT_BATCH_BYTES. Nothing is dropped, the order
 * is kept, and flush() sends what is held (before the command's result is announced).
 */
export class OutputBatcher {
  private held: string[] = [];
  private heldBytes = 0;
  private cancelTimer: (() => void) | null = null;
  private closed = false;
  /** How many batches were sent so far. */
  sent = 0;

  constructor(
    private readonly send: (text: string) => void,
    private readonly intervalMs = OUTPUT_BATCH_MS,
    private readonly maxBytes = OUTPUT_BATCH_BYTES,
    private readonly clock: ThrottleClock = REAL_CLOCK,
  ) {}

  add(chunk: string): void {
    if (this.closed || chunk.length === 0) return;
    this.held.push(chunk);
    this.heldBytes += Buffer.byteLength(chunk);
    if (this.heldBytes >= this.maxBytes) {
      this.sendHeld();
      return;
    }
    this.cancelTimer ??= this.clock.schedule(() => {
      this.cancelTimer = null;
      this.sendHeld();
    }, this.intervalMs);
  }

  /** The command ended: what is held is sent now; later chunks are ignored. */
  flush(): void {
    this.sendHeld();
    this.closed = true;
  }

  private sendHeld(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
    if (this.held.length === 0) return;
    const text = this.held.join('');
    this.held = [];
    this.heldBytes = 0;
    this.sent += 1;
    this.send(text);
  }
}
