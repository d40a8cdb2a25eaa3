/** How a throttle tells time and waits (the real clock, or a test's). */
export interface ThrottleClock {
  now(): number;
  /** Runs `fn` after `ms`; the returned function cancels it. */
  schedule(fn: () => void, ms: number): () => void;
}

export const REAL_CLOCK: ThrottleClock = {
  now: () => Date.now(),
  schedule(fn, ms) {
    const timer = setTimeout(fn, ms);
    // A held report never keeps a worker that is shutting down alive.
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** At most this many progress events per second and call: enough for a progress bar, cheap for Redis. */
export const PROGRESS_EVENTS_PER_SECOND = 4;

/**
 * Thins one call's progress reports to at most one per `intervalMs`. A report that comes sooner is
 * held, replacing the one held before, and sent when the interval is up: reports in between are
 * dropped, but the latest always goes out (a server that reports 10 times a second still ends at
 * its last report), in the order the server sent them.
 */
export class ProgressThrottle<T> {
  private lastSent = Number.NEGATIVE_INFINITY;
  private held: { report: T } | null = null;
  private cancelTimer: (() => void) | null = null;
  private closed = false;
  /** How many reports were sent so far. */
  sent = 0;

  constructor(
    private readonly send: (report: T) => void,
    private readonly intervalMs = 1000 / PROGRESS_EVENTS_PER_SECOND,
    private readonly clock: ThrottleClock = REAL_CLOCK,
  ) {}

  report(report: T): void {
    if (this.closed) return;
    const wait = this.lastSent + this.intervalMs - this.clock.now();
    if (wait <= 0 && !this.cancelTimer) {
      this.emit(report);
      return;
    }
    this.held = { report };
    this.cancelTimer ??= this.clock.schedule(() => {
      this.cancelTimer = null;
      this.sendHeld();
    }, Math.max(wait, 0));
  }

  /** The call ended: its held report is sent now rather than dropped; later reports are ignored. */
  flush(): void {
    this.stopTimer();
    this.sendHeld();
    this.closed = true;
  }

  /** The call was abandoned: its held report is dropped, and so are later ones. */
  close(): void {
    this.stopTimer();
    this.held = null;
    this.closed = true;
  }

  private sendHeld(): void {
    const held = this.held;
    this.held = null;
    if (held) this.emit(held.report);
  }

  private emit(report: T): void {
    this.lastSent = this.clock.now();
    this.sent += 1;
    this.send(report);
  }

  private stopTimer(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
  }
}
