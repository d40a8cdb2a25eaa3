import { randomUUID } from 'node:crypto';
import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { ElicitRequestParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { AppConfig } from '#libs/config';
import { RunSignals } from '#libs/queue';
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

/** What the model is told of a call that asked the user something and was lost before the answer reached it. */
export const ELICITATION_LOST =
  'outcome_unknown: the MCP server asked the user something during this call, and the call was no longer held open when the answer came (the worker holding it stopped, or MCP_ELICITATION_TIMEOUT_MS passed). It may or may not have taken effect.';

/** Where the worker holding a call listens for messages about it (answers, aborts, holds). */
const holderAddress = (key: string): string => `call:${key}`;
/**
 * How long the worker that got an answer waits for the holder to take it before the call counts as
 * lost, and how long a holder that took an answer waits for the follower to confirm it.
 */
export const HOLDER_ACK_MS = 5_000;
/** How long the holder's last word may take to go out when its worker shuts down. */
const SHUTDOWN_REPORT_MS = 2_000;
/** Beyond the tool's own bound (TOOL_TIMEOUT_MS, while the server works), how long a follower waits for the holder's word. */
const REMOTE_MARGIN_MS = 15_000;

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
type CallMessage =
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
type WireOutcome = Omit<PlannedOutcome, 'media'> & { media?: { kind: 'image' | 'audio'; mimeType: string; data: string }[] };

function toWire(outcome: PlannedOutcome): WireOutcome {
  const { media, ...rest } = outcome;
  return media ? { ...rest, media: media.map((part) => ({ kind: part.kind, mimeType: part.mimeType, data: part.data.toString('base64') })) } : rest;
}

function fromWire(outcome: WireOutcome): PlannedOutcome {
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

/**
 * The worker's calls that wait for a user's answer to an MCP server's question, by
 * `<turn_id>:<call_id>`: the run that resumes the turn finds its call here, or, where it runs on
 * another worker, reaches it here through Redis (RemoteCall): the answer comes to this worker,
 * which hands it to the server and reports what the call does next. A call is held for
 * MCP_ELICITATION_TIMEOUT_MS; on expiry, on a cancel of its turn, or when the worker shuts down,
 * the server is told `cancel`, the call is abandoned (notifications/cancelled) and forgotten (a
 * later answer then finds the outcome unknown).
 */
@Injectable()
export class McpCallsInFlight implements BeforeApplicationShutdown, OnApplicationShutdown {
  /** How long each side of an answer's hand-over waits for the other (see CallMessage). */
  ackMs = HOLDER_ACK_MS;
  private readonly logger = new Logger(McpCallsInFlight.name);
  private readonly held = new Map<string, CallInFlight>();
  private readonly unsubscribes = new Map<string, () => void>();
  /**
   * Held calls that asked again while served for another worker's run, until that run says where
   * the turn waits ('hold'): answers are taken meanwhile (the user answers only once the waitpoint
   * is committed, and its answer may overtake the follower's 'hold').
   */
  private readonly awaitingHold = new Map<string, CallInFlight>();
  /** Calls taken by an answer from another worker, not served until that worker confirms (see CallMessage). */
  private readonly reserved = new Map<string, { id: string; reply: string; result: ElicitResult }>();
  /** The calls this worker holds or serves for another worker's run, listening at their holder address. */
  private readonly listening = new Map<string, { call: CallInFlight; unsubscribe: (() => void) | null; subscribed: Promise<void> }>();
  /** Calls served for another worker's run, until their last report went out. */
  private readonly serving = new Set<Promise<void>>();

  constructor(
    private readonly config: AppConfig,
    private readonly signals: RunSignals,
  ) {}

  /**
   * Keeps a call that asked the user something until the turn resumes, the hold expires, or the
   * turn is cancelled at its waitpoint (the api's cancel signal for the suspended run `runId`).
   */
  hold(call: CallInFlight, runId: string): Promise<void> {
    this.held.set(call.key, call);
    call.holdFor(this.config.mcpElicitationTimeoutMs, () => this.release(call.key));
    // Best effort: without Redis the hold's expiry still ends the call.
    this.signals.onCancel(runId, () => this.release(call.key)).then(
      (unsubscribe) => {
        if (this.held.get(call.key) === call) this.unsubscribes.set(call.key, unsubscribe);
        else unsubscribe();
      },
      () => undefined,
    );
    return this.listen(call);
  }

  /** The held call of this key, taken out of the registry (undefined: not on this worker, or expired). */
  take(key: string): CallInFlight | undefined {
    const call = this.takeHeld(key);
    if (call) this.stopListening(key);
    return call;
  }

  /**
   * The call of this key held by another worker, which takes the user's answer and reports what the
   * call does next; null when no worker holds it (it stopped, the hold expired) or Redis is out of reach.
   */
  async reach(key: string, result: ElicitResult): Promise<RemoteCall | null> {
    const remote = new RemoteCall(key, this.signals, this.config.toolTimeoutMs + REMOTE_MARGIN_MS, this.ackMs);
    try {
      return (await remote.deliver(result)) ? remote : null;
    } catch {
      return null;
    }
  }

  /** Tells the server `cancel` and abandons the call (notifications/cancelled); nobody records its outcome. */
  release(key: string): void {
    const call = this.take(key);
    if (!call) return;
    abandon(call, 'no answer came in time');
  }

  /**
   * Before Redis is disconnected (RunSignals, onApplicationShutdown): held calls are abandoned, and
   * calls served for another worker's run are aborted and their `failed` sent, so that run records
   * the outcome unknown at once rather than after its silence bound.
   */
  async beforeApplicationShutdown(): Promise<void> {
    for (const key of [...this.held.keys()]) this.release(key);
    const reports: Promise<unknown>[] = [...this.serving];
    for (const [key, { reply }] of [...this.reserved]) reports.push(this.giveUp(key, reply, 'the worker holding the call stopped'));
    for (const { call } of [...this.listening.values()]) call.controller.abort(new Error('the worker holding the call stopped'));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled(reports), new Promise((resolve) => (timer = setTimeout(resolve, SHUTDOWN_REPORT_MS)))]);
    clearTimeout(timer);
  }

  /** A call held by a run that reached its waitpoint while the worker was draining is abandoned too. */
  onApplicationShutdown(): void {
    for (const key of [...this.held.keys()]) this.release(key);
    for (const { call } of [...this.listening.values()]) call.controller.abort(new Error('the worker holding the call stopped'));
  }

  private takeHeld(key: string): CallInFlight | undefined {
    const call = this.held.get(key);
    this.held.delete(key);
    this.awaitingHold.delete(key);
    this.unsubscribes.get(key)?.();
    this.unsubscribes.delete(key);
    return call;
  }

  /**
   * Answers that land on another worker reach the call here (best effort: without Redis they find it
   * lost). Resolves once the holder's channel is subscribed (or could not be), so that a waitpoint
   * is published only when an answer sent to another worker can already reach this one.
   */
  private listen(call: CallInFlight): Promise<void> {
    const current = this.listening.get(call.key);
    if (current?.call === call) return current.subscribed;
    this.stopListening(call.key);
    const entry: { call: CallInFlight; unsubscribe: (() => void) | null; subscribed: Promise<void> } = { call, unsubscribe: null, subscribed: Promise.resolve() };
    this.listening.set(call.key, entry);
    entry.subscribed = this.signals.onCallMessage(holderAddress(call.key), (message) => this.onMessage(call, message as CallMessage)).then(
      (unsubscribe) => {
        if (this.listening.get(call.key) === entry) entry.unsubscribe = unsubscribe;
        else unsubscribe();
      },
      (error: unknown) => {
        // The call stays held here (an answer resumed on this worker still takes it); another
        // worker's answer finds no holder and falls back (re-run or outcome unknown).
        this.logger.warn(`held call ${call.key}: other workers cannot reach it (${error instanceof Error ? error.message : String(error)})`);
      },
    );
    return entry.subscribed;
  }

  private stopListening(key: string): void {
    this.listening.get(key)?.unsubscribe?.();
    this.listening.delete(key);
  }

  private onMessage(call: CallInFlight, message: CallMessage): void {
    switch (message.kind) {
      case 'answer': {
        // Taken already (a run here resumed it, or another delivery came first): that one follows it.
        if (this.held.get(call.key) !== call) return void this.signals.sendCallMessage(message.reply, { kind: 'gone', id: message.id });
        this.takeHeld(call.key);
        const reservation = { id: message.id, reply: message.reply, result: message.result };
        this.reserved.set(call.key, reservation);
        // Not served before the follower's confirm, which may never come (it gave up, or stopped).
        call.holdFor(this.ackMs, () => {
          if (this.reserved.get(call.key) === reservation) void this.giveUp(call.key, reservation.reply, 'the answer was not confirmed in time');
        });
        void this.signals.sendCallMessage(message.reply, { kind: 'accepted', id: message.id });
        return;
      }
      case 'confirm': {
        const reservation = this.reserved.get(call.key);
        if (reservation?.id !== message.id) return;
        this.reserved.delete(call.key);
        this.track(this.serve(call, reservation.reply, reservation.result));
        return;
      }
      case 'revoke':
        // The follower gave up on this answer and fell back: the server must never act on it.
        if (this.reserved.get(call.key)?.id === message.id) {
          this.reserved.delete(call.key);
          this.stopListening(call.key);
          abandon(call, 'the answer was revoked');
        }
        return;
      case 'abort':
        call.controller.abort(new Error(message.reason));
        return;
      case 'hold':
        // Held again at the follower's new waitpoint: that run's cancel releases it. An answer that
        // came first took it already: nothing to hold.
        if (this.awaitingHold.get(call.key) === call) {
          this.awaitingHold.delete(call.key);
          void this.hold(call, message.runId);
        }
        return;
      case 'release':
        if (this.held.get(call.key) === call) this.release(call.key);
        else {
          abandon(call, 'the elicitation waitpoint could not be committed');
          this.stopListening(call.key);
        }
        return;
    }
  }

  /** A reserved call nobody confirmed (or whose worker stops): abandoned unserved, and its follower told `failed`. */
  private giveUp(key: string, reply: string, reason: string): Promise<boolean> {
    const call = this.listening.get(key)?.call;
    this.reserved.delete(key);
    this.stopListening(key);
    if (call) abandon(call, reason);
    return this.signals.sendCallMessage(reply, { kind: 'failed', message: reason });
  }

  private track(serving: Promise<void>): void {
    this.serving.add(serving);
    void serving.finally(() => this.serving.delete(serving));
  }

  /** Hands the answer to the server and reports to `reply` what the call does next, until its end. */
  private async serve(call: CallInFlight, reply: string, result: ElicitResult): Promise<void> {
    const send = (message: CallMessage): Promise<boolean> => this.signals.sendCallMessage(reply, message);
    call.onProgress = (report) => void send({ kind: 'progress', report });
    call.answer(result);
    try {
      const next = await call.next();
      if ('elicit' in next) {
        // Held again at once (answers may come before the follower's 'hold'), until the follower
        // says where the turn waits ('hold') or that it cannot ('release'), and at most the hold's expiry.
        this.held.set(call.key, call);
        this.awaitingHold.set(call.key, call);
        call.holdFor(this.config.mcpElicitationTimeoutMs, () => this.release(call.key));
        await send({ kind: 'elicit', params: next.elicit });
        return;
      }
      this.stopListening(call.key);
      const outcome = toWire(next.outcome);
      // A result larger than any response a server may send is not carried (RunSignals stores a
      // large message under a key, bounded by this).
      if (Buffer.byteLength(JSON.stringify(outcome)) > this.config.mcpMaxResponseBytes) {
        await send({ kind: 'failed', message: 'the result is larger than MCP_MAX_RESPONSE_BYTES' });
        return;
      }
      await send({ kind: 'outcome', outcome });
    } catch (error) {
      this.stopListening(call.key);
      await send({ kind: 'failed', message: error instanceof Error ? error.message : String(error) });
    } finally {
      call.onProgress = null;
    }
  }
}

/** Tells the server `cancel` for a question it waits on, and abandons the call (notifications/cancelled). */
function abandon(call: CallInFlight, reason: string): void {
  call.answer({ action: 'cancel' });
  call.controller.abort(new Error(reason));
}
