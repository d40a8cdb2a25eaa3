import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import type { OutgoingEvent } from '#libs/events';
import { tracingOn } from '#libs/telemetry';
import { CLAIM_QUEUE, claimBatch, claimQueueInputs, consumedWrite } from './claim-queue.js';
import { InputsRepository } from '../tables/inputs.repository.js';
import { lockForClaim, turnStartedWrite } from './session-claims.js';
import { TreeRepository } from '../cooperation/tree.repository.js';
import { insertItemsWrite } from '../tables/items.repository.js';
import { TERMINAL_TURN_STATUSES } from '../machines/turn-states.js';
import { turnStartRows, turnStartWrites } from './turn-start-writes.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import { attachmentBindings, AttachmentTransitions } from '../acceptance/attachment-transitions.js';
import { mayHaveActiveTurn } from '../controls/session-controls.js';
import { type HeldTurn, inputTracesOf } from './held-turn.js';
import { lastReceivedSeq, receiptsOf, userItemsOf } from '../endings/run-output.js';
import { SessionTransactions, type SessionTx } from '../transaction/session-transaction.js';
import { TurnTakeovers } from './turn-takeovers.js';
import { turnEvents } from '../steps/turn-events.js';

/** The account's cap was reached by a claim racing this one: nothing is written, the input stays queued. */
class AccountAtCap extends Error {}

/**
 * How a worker comes to hold a run (called by `SessionDriver`, before it holds any lease): it
 * claims the session's queue head as a new turn, or takes over the active turn's run that nobody
 * holds (after a crash or a release). Either way the worker leaves with a fresh lease of
 * RUN_LEASE_MS on the run. One transaction: one read under the session lock (the session, its
 * account, the queue's head), then one statement that writes the turn start with the events
 * announcing it to the outbox; it never touches Redis, so a Redis outage never changes what is
 * committed. The caller publishes the returned batch after commit (it orders the run's live
 * events after it).
 */
@Injectable()
export class TurnClaims {
  constructor(
    private readonly transactions: SessionTransactions,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly config: AppConfig,
    private readonly attachments: AttachmentTransitions,
    private readonly tree: TreeRepository,
    private readonly takeovers: TurnTakeovers,
  ) {}

  /**
   * Takes the session's next work: a run of the active turn that waits for a worker, else (when the
   * turns table shows no active turn and the queue is not paused) the head of the input queue.
   * Null when there is nothing to take; a claim with nothing to take writes nothing.
   */
  async claim(sessionId: string, runId: string, owner: string): Promise<HeldTurn | null> {
    try {
      const { value, committed } = await this.transactions.hold(sessionId, (tx) => this.claimIn(tx, runId, owner));
      return value ? { ...value, batch: committed.batch } : null;
    } catch (error) {
      // The account (the product user, with its apps' end users) runs its cap of turns across the
      // fleet: the input stays queued (the claim rolled back), and the account's next turn to end
      // nudges it again (RunEndings, RunOutputWriter), the recovery sweep failing that.
      if (error instanceof AccountAtCap) return null;
      throw error;
    }
  }

  private async claimIn(tx: SessionTx, runId: string, owner: string): Promise<HeldTurn | null> {
    const { manager, sessionId } = tx;
    const cap = this.config.maxActiveTurnsPerOwner;
    const locked = await lockForClaim(manager, sessionId, cap > 0 ? accountLockThreshold(cap) : null, CLAIM_QUEUE, TERMINAL_TURN_STATUSES);
    if (!locked) return null;
    const { session, accountId } = locked;
    // The session row's overview (written under this lock with every turn status change) says
    // whether a turn is active: only then is the turns table read. The unique index
    // turns_one_active_per_session still refuses a second active turn if the two ever disagreed.
    const active = mayHaveActiveTurn(session.currentTurn) ? await this.turns.activeTurn(manager, sessionId) : null;
    if (active) return this.takeovers.takeOver(manager, active, owner, session.trustedTools, locked.budgeted);
    if (session.queuePaused) return null;
    // A member of a cooperation tree waits for a slot of its tree's cap (queued, in order).
    if (session.depth > 0 && !admitted(await this.tree.admission(manager, session))) return null;
    // The queue read with the lock is of the statement's snapshot: current unless the session row
    // changed while the lock was awaited (a writer of the queue committed), then read again.
    const batch = claimBatch(locked.fresh ? claimQueueInputs(locked.queue) : await this.inputs.claimQueue(manager, sessionId));
    const input = batch[0];
    if (!input) return null;

    const now = new Date();
    const turnId = newId();
    const newItems = userItemsOf(batch, sessionId, now);
    const inputIds = batch.map((i) => i.id);
    // Under the lock the session row is current: its counters give the turn's number and its items' sequence numbers.
    const spec = {
      turnId,
      runId,
      sessionId,
      seq: Number(session.turnSeq) + 1,
      agentId: input.config.agent_id,
      model: input.config.model,
      inputIds,
      config: input.config,
      leaseOwner: owner,
      leaseMs: this.config.runLeaseMs,
      at: now,
      accountId,
    };
    const { turn, run } = turnStartRows(spec);
    const summary = { id: turnId, status: 'in_progress' as const, current_run_id: runId, result_run_id: null, waitpoint: null };
    tx.write(turnStartedWrite(sessionId, summary, batch.length, newItems.length, now, { accountId, cap }), ([row]) => {
      if (row?.admitted !== true) throw new AccountAtCap();
    });
    const lease = { runId, owner, epoch: 0 };
    for (const fragment of turnStartWrites(spec)) {
      tx.write(fragment, fragment.name === 'run' ? ([row]) => void (run.epoch = lease.epoch = Number(row?.epoch)) : undefined);
    }
    tx.write(consumedWrite(inputIds, turnId, runId, now));
    const { rows: userItems, write } = insertItemsWrite(Number(session.itemSeq) + 1, newItems.map((item) => ({ ...item, turnId, runId })));
    if (write) tx.write(write);
    // Files bind in the transaction that writes their message, after it (a reference to it).
    const bindings = attachmentBindings(batch, userItems);
    if (bindings.length > 0) tx.afterWrite((m) => this.attachments.bindToMessages(m, batch, userItems).then(() => undefined));
    const bound = new Set(bindings.map((pair) => pair.messageId));
    // The documented order: run created, turn created, turn in progress, then the turn's items.
    const events: OutgoingEvent[] = [turnEvents.run('created', run), turnEvents.turn('created', turn), turnEvents.turn('in_progress', turn)];
    const receipts = receiptsOf(batch);
    userItems.forEach((item, index) => events.push(turnEvents.item('added', item, index, receipts), turnEvents.item('done', item, index, receipts)));
    tx.emit(events, { epochSql: '(SELECT epoch FROM run)' });
    const held: HeldTurn = {
      turn,
      run,
      lease,
      config: input.config,
      lastInputSeq: lastReceivedSeq(batch, '0'),
      outputIndex: userItems.length,
      steps: [],
      trustedTools: session.trustedTools,
      fresh: true,
      filelessMessageIds: userItems.filter((item) => !bound.has(item.id)).map((item) => item.id),
      budgeted: locked.budgeted,
      batch: { sessionId, rows: [] },
    };
    // Traced: a batch of several inputs, each maybe from a request of its own; the run links to them.
    if (batch.length > 1 && tracingOn()) held.inputTraces = inputTracesOf(batch);
    return held;
  }
}

/**
 * The cap is a queue (README "Cooperation: subagents and trees"): a member starts when fewer than the cap of its
 * tree's members hold a slot and no claimable member queued before it (FIFO across the tree). A
 * refused claim writes nothing; the slot's release nudges the tree's queued members.
 */
export function admitted(gate: { cap: number | null; running: number; queuedBefore: number }): boolean {
  return gate.cap === null || gate.running + gate.queuedBefore < gate.cap;
}

/**
 * Claims of one account running at least this many turns serialise on the account's lock (the cap
 * is then strict); below it they go in parallel, each still counting the committed turns, so only
 * claims racing each other across the last CLAIM_LOCK_MARGIN places could pass the cap together,
 * and that many cannot be in flight at once for one account on a fleet of up to two default
 * workers. An account far below its cap, the common case, pays one index count and no wait.
 */
export const CLAIM_LOCK_MARGIN = 64;

export function accountLockThreshold(cap: number): number {
  return Math.max(0, cap - CLAIM_LOCK_MARGIN);
}
