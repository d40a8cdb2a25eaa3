import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import type { OutgoingEvent } from '#libs/events';
import { tracingOn } from '#libs/telemetry';
import { modelCallEntry } from '#libs/usage';
import { consumedWrite } from '../claims/claim-queue.js';
import { InputsRepository } from '../tables/inputs.repository.js';
import { runStartedWrite } from '../claims/session-claims.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { insertItemsWrite } from '../tables/items.repository.js';
import { type Lease } from '../claims/lease.js';
import { type RunEntity } from '../tables/turn.entities.js';
import { toCurrentTurn } from '../views/projections.js';
import { RunsRepository } from '../tables/runs.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import { attachmentBindings, AttachmentTransitions } from '../acceptance/attachment-transitions.js';
import { type HeldTurn, inputTracesOf, type RunOutput, type Successor } from '../claims/held-turn.js';
import type { Committed } from '../transaction/after-commit.js';
import { SessionTransactions } from '../transaction/session-transaction.js';
import { closingEvents, lastReceivedSeq, lostDeltasNotice, receiptsOf, RunOutputWriter, shownItemWrite, userItemsOf } from './run-output.js';
import { turnEvents } from '../steps/turn-events.js';
import { recordUsage } from '../steps/usage-writes.js';

/**
 * How the worker that holds a run hands it on at a boundary (called by `RunClosing`, under the
 * lease it got from `TurnClaims` or a previous yield): it yields the run to the steers that
 * arrived, or releases the run for another worker on shutdown (`TurnSettlement` settles). Each is one
 * transaction under the session lock, fenced by that lease (null when it is gone), that also writes
 * the events announcing it to the outbox; none touches Redis, so a Redis outage never changes what
 * is committed. The caller publishes the returned batch after commit.
 */
@Injectable()
export class RunEndings {
  constructor(
    private readonly transactions: SessionTransactions,
    private readonly sessions: SessionsRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly config: AppConfig,
    private readonly attachments: AttachmentTransitions,
    private readonly writer: RunOutputWriter,
  ) {}

  /**
   * Yields the run at a safe boundary into the next run of the same turn with the steers that
   * arrived after the turn's input: the shown text becomes an incomplete commentary item, the steer
   * messages user items. 'cancelled' when the turn is being cancelled (it takes no more input).
   */
  async yieldToSteers(held: HeldTurn, lease: Lease, output: RunOutput, nextRunId: string): Promise<Successor | 'cancelled' | null> {
    const { sessionId } = held.turn;
    const { value, committed } = await this.transactions.hold(sessionId, async (tx) => {
      const { manager } = tx;
      const session = await this.sessions.lock(manager, sessionId);
      if (!session) return null;
      if ((await this.turns.findTurn(manager, held.turn.id))?.cancellationPending) return 'cancelled' as const;
      const steers = await this.inputs.steersAfter(manager, sessionId, held.lastInputSeq);
      const now = new Date();
      const epoch = await this.runs.nextEpoch(manager, sessionId);
      const next = await this.runs.yieldRun(
        manager,
        lease,
        { nextRunId, epoch, inputIds: steers.map((i) => i.id), at: now },
        this.config.runLeaseMs,
      );
      if (!next) return null;
      // The model call the steer cut is a call of the yielded run, in the ledger with the yield.
      const cut = output.cutCall;
      const { rows: spent } = cut ? await recordUsage(manager, { sessionId, runId: lease.runId, turnId: held.turn.id }, [modelCallEntry('model_call', cut.model, cut.usage, { wallMs: cut.wallMs })]) : { rows: [] };
      const newItems = userItemsOf(steers, sessionId, now);
      const partial = output.item ? 1 : 0;
      // Under the lock the session row is current: its item counter numbers the items written here.
      const firstSeq = Number(session.itemSeq) + 1;
      tx.write(runStartedWrite(sessionId, toCurrentTurn({ ...held.turn, currentRunId: next.id }), steers.length, partial + newItems.length, now));
      tx.write(consumedWrite(steers.map((i) => i.id), held.turn.id, next.id, now));
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      let index = output.outputIndex;
      if (output.item) {
        const shown = shownItemWrite(output.item, firstSeq, 'incomplete', output, now);
        tx.write(shown.write);
        events.push(...closingEvents(shown.item, index, output.text));
        index += 1;
      }
      const yielded: RunEntity = { ...held.run, id: lease.runId, status: 'yielded', completedAt: now, leaseOwner: null, leaseExpiresAt: null };
      events.push(turnEvents.run('yielded', yielded), turnEvents.run('created', next));
      const { rows: userItems, write } = insertItemsWrite(firstSeq + partial, newItems.map((item) => ({ ...item, turnId: held.turn.id, runId: next.id })));
      if (write) tx.write(write);
      // Files bind in the transaction that writes their message, after it (a reference to it).
      if (attachmentBindings(steers, userItems).length > 0) tx.afterWrite((m) => this.attachments.bindToMessages(m, steers, userItems).then(() => undefined));
      const receipts = receiptsOf(steers);
      for (const item of userItems) {
        events.push(turnEvents.item('added', item, index, receipts), turnEvents.item('done', item, index, receipts));
        index += 1;
      }
      held.lastInputSeq = lastReceivedSeq(steers, held.lastInputSeq);
      tx.emit(events, { epoch });
      const successor: Omit<Successor, keyof Committed> = { run: next, lease: { runId: next.id, owner: lease.owner, epoch }, outputIndex: index, spent };
      // Traced: the steers' requests are linked from the next run's span.
      if (tracingOn()) successor.inputTraces = inputTracesOf(steers);
      return successor;
    });
    // The caller publishes the batch: the next run's live events follow it.
    return value === null || value === 'cancelled' ? value : { ...value, ...committed };
  }

  /**
   * Gives the run up at a boundary (worker shutdown): it becomes `interrupted`, its shown text an
   * incomplete item, and the next run of the turn waits, unleased, for any worker to continue.
   */
  async release(held: HeldTurn, lease: Lease, output: RunOutput): Promise<Successor | null> {
    const { sessionId } = held.turn;
    // The successor's batch goes back to the caller, who publishes it.
    const { value } = await this.transactions.hold(sessionId, async ({ manager }) => {
      await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const epoch = await this.runs.nextEpoch(manager, sessionId);
      const result = await this.runs.interruptRun(manager, lease.runId, lease, { nextRunId: newId(), epoch, inputIds: [], at: now });
      if (!result) return null;
      // The model call the shutdown cut is a call of the released run (its successor makes it again),
      // in the ledger with the release, as a call a steer cut is with the yield.
      const cut = output.cutCall;
      const recorded = cut ? await recordUsage(manager, { sessionId, runId: lease.runId, turnId: held.turn.id }, [modelCallEntry('model_call', cut.model, cut.usage, { wallMs: cut.wallMs })]) : null;
      const interrupted = recorded?.run ? { ...result, interrupted: { ...result.interrupted, usage: recorded.run } } : result;
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      if (output.item) {
        const seq = await this.sessions.reserveItemSeqs(manager, sessionId, 1);
        events.push(...closingEvents(await this.writer.writeShown(manager, output.item, seq, 'incomplete', output, now), output.outputIndex, output.text));
      }
      const successor = await this.writer.announceSuccessor(manager, held.turn, interrupted, events, epoch, output.item ? output.outputIndex + 1 : output.outputIndex);
      return { ...successor, spent: recorded?.rows ?? [] };
    });
    return value;
  }
}
