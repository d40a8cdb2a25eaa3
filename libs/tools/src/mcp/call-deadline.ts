/**
 * TOOL_TIMEOUT_MS of an MCP call, counted only while the call is the server's to answer: paused
 * while the server waits for the user (an elicitation), which may take minutes.
 */
export class CallDeadline {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private remaining: number;
  private armedAt = 0;

  constructor(private readonly ms: number) {
    this.remaining = ms;
    this.arm();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get passed(): boolean {
    return this.controller.signal.aborted;
  }

  pause(): void {
    if (!this.timer) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.remaining -= Date.now() - this.armedAt;
  }

  resume(): void {
    if (this.timer || this.passed) return;
    this.arm();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(): void {
    this.armedAt = Date.now();
    this.timer = setTimeout(() => this.controller.abort(new Error(`no answer within ${this.ms} ms`)), Math.max(0, this.remaining));
    this.timer.unref();
  }
}
