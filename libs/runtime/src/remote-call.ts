import { randomUUID } from 'node:crypto';
import type { ElicitRequestParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { RunSignals } from '#libs/queue';
import type { ToolProgress } from '#libs/tools';
import type { CallProgress, FollowedCall } from './call-in-flight.js';
import type { PlannedOutcome } from './step-plan.js';

// A call followed from another worker than the one holding it open (RemoteCall), and the messages
// the two workers exchange about it. The holder's side is McpCallsInFlight (mcp-calls-in-flight.ts).

/** What the model is told of a call that asked the user something and was lost before the answer reached it. */
export const ELICITATION_LOST =
  'outcome_unknown: the MCP server asked the user something during this call, and the call was no longer held open when the answer came (the worker holding it stopped, or MCP_ELICITATION_TIMEOUT_MS passed). It may or may not have taken effect.';

/** Where the worker holding a call listens for messages about it (answers, aborts, holds). */
export const holderAddress = (key: string): string => `call:${key}`;
/**
 * How long the worker that got an answer waits for the holder to take it before the call counts as
 * lost, and how long a holder that took an answer waits for the follower to confirm it.
 */
export const HOLDER_ACK_MS = 5_000;
/** How long the holder's last word may take to go out when its worker shuts down. */
export const SHUTDOWN_REPORT_MS = 2_000;
/** Beyond the tool's own bound (TOOL_TIMEOUT_MS, while the server works), how long a follower waits for the holder's word. */
export const REMOTE_MARGIN_MS = 15_000;

/**
 * What the worker following a call and the worker holding it say to each other (over RunSignals'
 * call messages). Handing an answer over is a two-phase exchange, so that the call is answered only
 * where the follower follows it, whatever either side's delays (no clocks compared):
 *
 *   follower: answer(id) ─▶ holder: takes the call out of its hold, reserved for `id`; accepted(id)
 *   follower: accepted(id) within HOLDER_ACK_MS ─▶ confirm(id), and from then on follows the call
 *             (never falls back, even where the confirm's publish seemed to fail)
 *   follower: no accepted(id) in time, or gone(id) ─▶ revoke(id), and falls back (an idempotent call
 *             runs again, another's outcome is unknown)
 *   holder:   hands the answer to the server only on confirm(id); on revoke(id), or with no confirm
 *             within HOLDER_ACK_MS, it tells the server `cancel`, abandons the call and reports
 *             `failed` (a follower that did confirm then records the outcome unknown).
 *
 * So a stalled holder that reads the answer after the follower gave up never serves it: the
 * follower sent no confirm, only (at best) a revoke.
 */
export type CallMessage =
  /** follower → holder: the user's answer, delivery `id`; replies go to `reply`. */
  | { kind: 'answer'; id: string; result: ElicitResult; reply: string }
  /** follower → holder: the holder's `accepted` came in time: hand the answer to the server. */
  | { kind: 'confirm'; id: string }
  /** follower → holder: no `accepted` in time: the follower fell back; the answer must not be served. */
  | { kind: 'revoke'; id: string }
  /** follower → holder: the run following the call stopped it (cancel, lost lease). */
  | { kind: 'abort'; reason: string }
  /** follower → holder: the call asked again and the turn waits at a waitpoint of run `runId`: keep holding it. */
  | { kind: 'hold'; runId: string }
  /** follower → holder: the waitpoint could not be committed: tell the server `cancel` and let the call go. */
  | { kind: 'release' }
  /** holder → follower */
  | { kind: 'accepted'; id: string }
  | { kind: 'gone'; id: string }
  | { kind: 'progress'; report: ToolProgress }
  | { kind: 'elicit'; params: ElicitRequestParams }
  | { kind: 'outcome'; outcome: WireOutcome }
  | { kind: 'failed'; message: string };

/** A PlannedOutcome as JSON carries it: media bytes as base64. */
export type WireOutcome = Omit<PlannedOutcome, 'media'> & { media?: { kind: 'image' | 'audio'; mimeType: string; data: string }[] };

export function toWire(outcome: PlannedOutcome): WireOutcome {
  const { media, ...rest } = outcome;
  return media ? { ...rest, media: media.map((part) => ({ kind: part.kind, mimeType: part.mimeType, data: part.data.toString('base64') })) } : rest;
}

export function fromWire(outcome: WireOutcome): PlannedOutcome {
  const { media, ...rest } = outcome;
  return media ? { ...rest, media: media.map((part) => ({ kind: part.kind, mimeType: part.mimeType, data: Buffer.from(part.data, 'base64') })) } : rest;
}

/**
 * A call held open in another worker, followed from this one: the run that resumed the turn
 * landed here, so the user's answer went to the holder (which answers the server), and the
 * holder reports what the call does next — its progress, its outcome, or its next question.
 * Aborting `controller` tells the holder to abort the call; the holder going silent past the
 * call's own bound makes the outcome unknown, as a lost call's is.
 */
export class RemoteCall implements FollowedCall {
  readonly controller = new AbortController();
  onProgress: ((report: ToolProgress) => void) | null = null;
  private readonly queue: CallProgress[] = [];
  private waiter: ((progress: CallProgress) => void) | null = null;
  private accept: ((accepted: boolean) => void) | null = null;
  private unsubscribe: (() => void) | null = null;
  private handedOver = false;
  private readonly id = randomUUID();
  private readonly reply = `reply:${this.id}`;

  constructor(
    readonly key: string,
    private readonly signals: RunSignals,
    private readonly silenceMs: number,
    private readonly ackMs = HOLDER_ACK_MS,
  ) {
    this.controller.signal.addEventListener('abort', () => {
      // Held again for the next run's waitpoint: that run's cancel releases it, not this one's abort.
      if (this.handedOver) return;
      const reason = this.controller.signal.reason;
      void this.send({ kind: 'abort', reason: reason instanceof Error ? reason.message : 'aborted' });
      // Nothing more is read from the holder: the run stopped following the call.
      this.close();
    });
  }

  /**
   * @internal Listens for the holder's replies, sends the answer, and says whether this side now
   * follows the call (the holder took it in time and was told to serve it); see CallMessage.
   */
  async deliver(result: ElicitResult): Promise<boolean> {
    this.unsubscribe = await this.signals.onCallMessage(this.reply, (message) => this.received(message as CallMessage));
    let timer: NodeJS.Timeout | undefined;
    const accepted = new Promise<boolean>((resolve) => {
      this.accept = resolve;
      timer = setTimeout(() => resolve(false), this.ackMs);
    });
    if (!(await this.send({ kind: 'answer', id: this.id, result, reply: this.reply }))) this.accept?.(false);
    const taken = await accepted;
    clearTimeout(timer);
    this.accept = null;
    if (taken) {
      // Committed: a confirm that seems lost may still have reached the holder, so this side follows
      // the call either way (a holder that never hears it reports `failed`: outcome unknown).
      await this.send({ kind: 'confirm', id: this.id });
      return true;
    }
    void this.send({ kind: 'revoke', id: this.id });
    this.close();
    return false;
  }

  next(): Promise<CallProgress> {
    const queued = this.queue.shift();
    if (queued) return Promise.resolve(this.settle(queued));
    return new Promise<CallProgress>((resolve, reject) => {
      const signal = this.controller.signal;
      const lost = setTimeout(() => finish({ outcome: { success: false, output: ELICITATION_LOST } }), this.silenceMs);
      const onAbort = (): void => {
        clearTimeout(lost);
        this.waiter = null;
        reject(signal.reason);
      };
      const finish = (progress: CallProgress): void => {
        clearTimeout(lost);
        signal.removeEventListener('abort', onAbort);
        this.waiter = null;
        resolve(this.settle(progress));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiter = finish;
    });
  }

  /** The user's answer to a later question of the call comes through a new delivery (its resumed run), never here. */
  answer(result: ElicitResult): boolean {
    // The one answer this side gives itself: `cancel` where the waitpoint could not be committed.
    if (result.action === 'cancel') {
      void this.send({ kind: 'release' });
      this.close();
    }
    return false;
  }

  /** The call asked again and the turn waits at run `runId`'s waitpoint: the holder keeps it (and hears that run's cancel). */
  held(runId: string): void {
    this.handedOver = true;
    void this.send({ kind: 'hold', runId });
    this.close();
  }

  private received(message: CallMessage): void {
    switch (message.kind) {
      case 'accepted':
      case 'gone':
        if (message.id === this.id) this.accept?.(message.kind === 'accepted');
        return;
      case 'progress':
        this.onProgress?.(message.report);
        return;
      case 'elicit':
        return this.push({ elicit: message.params });
      case 'outcome':
        return this.push({ outcome: fromWire(message.outcome) });
      case 'failed':
        return this.push({ outcome: { success: false, output: ELICITATION_LOST } });
    }
  }

  private push(progress: CallProgress): void {
    if (this.waiter) this.waiter(progress);
    else this.queue.push(progress);
  }

  /** The holder's last word on this delivery: nothing more comes to this reply address. */
  private settle(progress: CallProgress): CallProgress {
    if ('outcome' in progress) this.close();
    return progress;
  }

  private send(message: CallMessage): Promise<boolean> {
    return this.signals.sendCallMessage(holderAddress(this.key), message);
  }

  /** Stops listening for the holder's replies (once the call ended, was held again, or was dropped). */
  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}
