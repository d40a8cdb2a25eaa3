import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { AppConfig } from '#libs/config';
import { RunSignals } from '#libs/queue';
import { CallInFlight } from './call-in-flight.js';
import { type CallMessage, HOLDER_ACK_MS, holderAddress, REMOTE_MARGIN_MS, RemoteCall, SHUTDOWN_REPORT_MS, toWire } from './remote-call.js';

// The call a worker holds open (call-in-flight.ts) and the call another worker follows
// (remote-call.ts) are in files of their own; the lib's entry point exports them from here.
export { CallInFlight, type CallProgress, type FollowedCall } from './call-in-flight.js';
export { ELICITATION_LOST, RemoteCall } from './remote-call.js';

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
