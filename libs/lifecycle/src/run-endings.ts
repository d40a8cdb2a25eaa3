import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { metrics } from '#libs/metrics';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { InputsRepository } from '#libs/inputs';
import { SessionsRepository } from '#libs/sessions';
import { type Lease, ModelRequestsRepository, type RunEntity, toCurrentTurn, ItemsRepository, RunsRepository, TurnsRepository } from '#libs/turns';
import { AttachmentTransitions } from './attachment-transitions.js';
import { CooperationWaits } from './cooperation-waits.js';
import type { HeldTurn, Outcome, RunOutput, Settled, Successor } from './held-turn.js';
import { closingEvents, lastReceivedSeq, lostDeltasNotice, receiptsOf, RunOutputWriter, turnSeconds, userItemsOf } from './run-output.js';
import { turnEvents } from './turn-events.js';

/**
 * How the worker that holds a run ends it at a boundary (called by `RunExecutor`, under the lease
 * it got from `TurnClaims` or a previous yield): it yields the run to the steers that arrived,
 * settles the turn's outcome, or releases the run for another worker on shutdown. Each is one
 * transaction under the session lock, fenced by that lease (null when it is gone), that also writes
 * the events announcing it to the outbox; none touches Redis, so a Redis outage never changes what
 * is committed. The caller publishes the returned batch after commit.
 */
@Injectable()
export class RunEndings {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly items: ItemsRepository,
    private readonly outbox: EventOutbox,
    private readonly config: AppConfig,
    private readonly attachments: AttachmentTransitions,
    private readonly writer: RunOutputWriter,
    private readonly cooperation: CooperationWaits,
    private readonly modelRequests: ModelRequestsRepository,
  ) {}

  /**
   * Yields the run at a safe boundary into the next run of the same turn with the steers that
   * arrived after the turn's input: the shown text becomes an incomplete commentary item, the steer
   * messages user items. 'cancelled' when the turn is being cancelled (it takes no more input).
   */
  async yieldToSteers(held: HeldTurn, lease: Lease, output: RunOutput, nextRunId: string): Promise<Successor | 'cancelled' | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
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
      const newItems = userItemsOf(steers, sessionId, now);
      const partial = output.item ? 1 : 0;
      const firstSeq = await this.sessions.recordRunStarted(
        manager,
        sessionId,
        toCurrentTurn({ ...held.turn, currentRunId: next.id }),
        steers.length,
        partial + newItems.length,
        now,
      );
      await this.inputs.markConsumed(
        manager,
        steers.map((i) => i.id),
        held.turn.id,
        next.id,
        now,
      );
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      let index = output.outputIndex;
      if (output.item) {
        events.push(...closingEvents(await this.writer.writeShown(manager, output.item, firstSeq, 'incomplete', output, now), index, output.text));
        index += 1;
      }
      const yielded: RunEntity = { ...held.run, id: lease.runId, status: 'yielded', completedAt: now, leaseOwner: null, leaseExpiresAt: null };
      events.push(turnEvents.run('yielded', yielded), turnEvents.run('created', next));
      const userItems = await this.items.insertItems(manager, firstSeq + partial, newItems.map((item) => ({ ...item, turnId: held.turn.id, runId: next.id })));
      await this.attachments.bindToMessages(manager, steers, userItems);
      const receipts = receiptsOf(steers);
      for (const item of userItems) {
        events.push(turnEvents.item('added', item, index, receipts), turnEvents.item('done', item, index, receipts));
        index += 1;
      }
      held.lastInputSeq = lastReceivedSeq(steers, held.lastInputSeq);
      const batch = await this.outbox.append(manager, sessionId, events, { epoch });
      return { run: next, lease: { runId: next.id, owner: lease.owner, epoch }, outputIndex: index, batch, nudges: [] };
    });
  }

  /**
   * Commits the run's outcome: the model call as a step, the output item, run and turn, in one
   * transaction. A cancel accepted before this commit wins over completion (the client was told the
   * turn would stop); a failure stays a failure. Text already shown is kept: the final answer when
   * completed, an incomplete item otherwise. Null when the lease is gone.
   */
  async settle(held: HeldTurn, lease: Lease, output: RunOutput, outcome: Outcome): Promise<Settled | null> {
    const settled = await this.settleOnce(held, lease, output, outcome);
    if (settled) metrics.turnFinished(settled.status, turnSeconds(settled.turn));
    return settled;
  }

  private async settleOnce(held: HeldTurn, lease: Lease, output: RunOutput, outcome: Outcome): Promise<Settled | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const modelCall = outcome.status === 'completed' ? outcome.modelCall : undefined;
      // The answer's step id, chosen here (afresh on every attempt) when its request is recorded with it.
      const answerId = modelCall?.requestJson ? newId() : undefined;
      const settled = await this.turns.settle(manager, {
        lease,
        runId: lease.runId,
        runStatus: outcome.status,
        turn: held.turn,
        error: outcome.status === 'failed' ? outcome.error : null,
        outputShown: output.item !== null,
        answer: modelCall ? { id: answerId, input: { model: modelCall.model }, output: { text: output.text, ...(modelCall.usage ? { usage: modelCall.usage } : {}), ...(modelCall.finishReason ? { finish_reason: modelCall.finishReason } : {}) } } : undefined,
        usage: modelCall?.usage ?? null,
        context: outcome.context ?? null,
        at: now,
      });
      if (!settled) return null;
      const { turn, runUsage } = settled;
      // The answer is a step only when the turn completed (a cancel accepted first wins): its request with it.
      if (answerId && modelCall?.requestJson && turn.status === 'completed') await this.modelRequests.record(manager, answerId, modelCall.requestJson);
      // A failed turn pauses what waits behind it: the user decides whether the queue goes on.
      if (turn.status === 'failed' && session && session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, sessionId, true);
      const final = turn.status as Outcome['status'];
      const completed = final === 'completed';
      const error = turn.error;
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      const writes = output.item !== null || (completed && !(outcome.status === 'completed' && outcome.withoutAnswer));
      const { firstItemSeq: seq, crowdedAccount } = await this.sessions.recordTurnFreed(manager, sessionId, toCurrentTurn(turn), writes ? 1 : 0, now, this.config.maxActiveTurnsPerOwner);
      if (writes) events.push(...(await this.writer.finalOutput(manager, held, lease, output, completed ? 'completed' : 'incomplete', seq, now)));
      const run: RunEntity = { ...held.run, id: lease.runId, status: final, completedAt: now, error, leaseOwner: null, leaseExpiresAt: null, usage: runUsage };
      events.push(turnEvents.run(final, run), turnEvents.turn(final, turn));
      // No queue nudge: the settling worker's driver looks for the session's next input itself. A
      // member's parent hears of it (and the tree's queued members, a slot freed).
      const nudges = await this.cooperation.memberTurnEnded(manager, session, turn);
      // The account was at its cap of running turns: its sessions waiting for a slot may start.
      if (crowdedAccount) nudges.push({ kind: 'account', accountId: crowdedAccount });
      return { turn, status: final, batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), nudges, pendingInputs: session?.pendingInputCount ?? 0 };
    });
  }

  /**
   * Gives the run up at a boundary (worker shutdown): it becomes `interrupted`, its shown text an
   * incomplete item, and the next run of the turn waits, unleased, for any worker to continue.
   */
  async release(held: HeldTurn, lease: Lease, output: RunOutput): Promise<Successor | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const epoch = await this.runs.nextEpoch(manager, sessionId);
      const result = await this.runs.interruptRun(manager, lease.runId, lease, { nextRunId: newId(), epoch, inputIds: [], at: now });
      if (!result) return null;
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      if (output.item) {
        const seq = await this.sessions.reserveItemSeqs(manager, sessionId, 1);
        events.push(...closingEvents(await this.writer.writeShown(manager, output.item, seq, 'incomplete', output, now), output.outputIndex, output.text));
      }
      return this.writer.announceSuccessor(manager, held.turn, result, events, epoch, output.item ? output.outputIndex + 1 : output.outputIndex);
    });
  }
}
