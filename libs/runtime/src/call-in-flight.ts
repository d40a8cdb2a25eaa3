import type { ElicitRequestParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolProgress } from '#libs/tools';
import type { PlannedOutcome } from './step-plan.js';

/** What a server call in flight did next: it finished, or it asks the user something first. */
export type CallProgress = { outcome: PlannedOutcome } | { elicit: ElicitRequestParams };

/**
 * A call the run follows: held in this worker (CallInFlight) or in another one (RemoteCall). The
 * run aborts it through `controller`, reads its progress through `onProgress`, and waits for what
 * it does next.
 */
export interface FollowedCall {
  readonly key: string;
  readonly controller: AbortController;
  onProgress: ((report: ToolProgress) => void) | null;
  next(): Promise<CallProgress>;
  answer(result: ElicitResult): boolean;
}

/**
 * One server-executed tool call that may stop in the middle to ask the user something (an MCP
 * server's `elicitation/create`). The call itself keeps running (its MCP request stays open); the
 * run that started it stops at a question waitpoint and ends, and the run that resumes the turn
 * hands the answer in (`answer`) and follows the call to its end, on the same worker.
 */
export class CallInFlight implements FollowedCall {
  /** The call's own signal: a cancel or a lost lease of whichever run follows the call aborts it. */
  readonly controller = new AbortController();
  /** Where the server's progress reports go: the run following the call now (none while it is held). */
  onProgress: ((report: ToolProgress) => void) | null = null;
  private readonly outcome: Promise<PlannedOutcome>;
  private pending: { params: ElicitRequestParams; answer: (result: ElicitResult) => void } | null = null;
  private wake: (() => void) | null = null;
  private expiry: NodeJS.Timeout | null = null;

  constructor(
    readonly key: string,
    run: (call: CallInFlight) => Promise<PlannedOutcome>,
  ) {
    this.outcome = run(this);
    // Rejections are read through next(); an abandoned call's must not be unhandled.
    this.outcome.catch(() => undefined);
  }

  /** The `elicit` hook of the call's context: the server's question, answered when the user answers. */
  elicit = (params: ElicitRequestParams, signal: AbortSignal): Promise<ElicitResult> =>
    new Promise<ElicitResult>((resolve) => {
      // One question at a time: a second one while the user has the first is declined.
      if (this.pending) {
        resolve({ action: 'decline' });
        return;
      }
      const answer = (result: ElicitResult): void => {
        this.pending = null;
        resolve(result);
      };
      this.pending = { params, answer };
      signal.addEventListener('abort', () => answer({ action: 'cancel' }), { once: true });
      this.wake?.();
    });

  /** The call's end, or its next question to the user, whichever comes first. Rejects as the call does. */
  async next(): Promise<CallProgress> {
    if (this.pending) return { elicit: this.pending.params };
    const asked = new Promise<CallProgress>((resolve) => {
      this.wake = () => {
        if (this.pending) resolve({ elicit: this.pending.params });
      };
    });
    try {
      return await Promise.race([this.outcome.then((outcome) => ({ outcome })), asked]);
    } finally {
      this.wake = null;
    }
  }

  /** Hands the user's answer to the server; false when nothing waits for one. */
  answer(result: ElicitResult): boolean {
    if (this.expiry) clearTimeout(this.expiry);
    this.expiry = null;
    if (!this.pending) return false;
    this.pending.answer(result);
    return true;
  }

  /** Held for an answer at most `ms`; then `onExpiry` (the server is told cancel). */
  holdFor(ms: number, onExpiry: () => void): void {
    if (this.expiry) clearTimeout(this.expiry);
    this.expiry = setTimeout(onExpiry, ms);
    this.expiry.unref();
  }
}
