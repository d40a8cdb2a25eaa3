import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { type FrozenInputConfig, InputsRepository } from '#libs/inputs';
import { SessionsRepository, TreeRepository } from '#libs/sessions';
import { type TurnEntity, ItemsRepository, RunsRepository, StepsRepository, TurnsRepository } from '#libs/turns';
import { AttachmentTransitions } from './attachment-transitions.js';
import { mayHaveActiveTurn } from './session-controls.js';
import type { HeldTurn } from './held-turn.js';
import { lastReceivedSeq, receiptsOf, userItemsOf } from './run-output.js';
import { turnEvents } from './turn-events.js';

/**
 * How a worker comes to hold a run (called by `SessionDriver`, before it holds any lease): it
 * claims the session's queue head as a new turn, or takes over the active turn's run that nobody
 * holds (after a crash or a release). Either way the worker leaves with a fresh lease of
 * RUN_LEASE_MS on the run. One transaction under the session lock that also writes the events
 * announcing it to the outbox; it never touches Redis, so a Redis outage never changes what is
 * committed. The caller publishes the returned batch after commit.
 */
@Injectable()
export class TurnClaims {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly steps: StepsRepository,
    private readonly items: ItemsRepository,
    private readonly outbox: EventOutbox,
    private readonly config: AppConfig,
    private readonly attachments: AttachmentTransitions,
    private readonly tree: TreeRepository,
  ) {}

  /**
   * Takes the session's next work: a run of the active turn that waits for a worker, else (when the
   * turns table shows no active turn and the queue is not paused) the head of the input queue.
   */
  async claim(sessionId: string, runId: string, owner: string): Promise<HeldTurn | null> {
    return this.dataSource.transaction(async (manager) => {
      const cap = this.config.maxActiveTurnsPerOwner;
      const locked = await this.sessions.lockForClaim(manager, sessionId, cap > 0 ? accountLockThreshold(cap) : null);
      if (!locked) return null;
      const { session, accountId } = locked;
      // The session row's overview (written under this lock with every turn status change) says
      // whether a turn is active: only then is the turns table read. The unique index
      // turns_one_active_per_session still refuses a second active turn if the two ever disagreed.
      const active = mayHaveActiveTurn(session.currentTurn) ? await this.turns.activeTurn(manager, sessionId) : null;
      if (active) return this.takeOver(manager, active, owner, session.trustedTools);
      if (session.queuePaused) return null;
      // A member of a cooperation tree waits for a slot of its tree's cap (queued, in order).
      if (session.depth > 0 && !admitted(await this.tree.admission(manager, session))) return null;
      const head = await this.inputs.head(manager, sessionId);
      if (!head) return null;
      // A steer head takes the whole contiguous steer prefix as one batch; a follow-up runs alone.
      const batch = head.mode === 'steer' ? await this.inputs.steerPrefix(manager, sessionId) : [head];
      const input = batch[0] ?? head;

      const now = new Date();
      const turnId = newId();
      const newItems = userItemsOf(batch, sessionId, now);
      const started = await this.sessions.recordTurnStarted(
        manager,
        sessionId,
        { id: turnId, status: 'in_progress', current_run_id: runId, result_run_id: null, waitpoint: null },
        batch.length,
        newItems.length,
        now,
        { accountId, cap },
      );
      // The account (the product user, with its apps' end users) runs its cap of turns across the
      // fleet: the input stays queued (nothing was written), and the account's next turn to end
      // nudges it again (RunEndings, RunOutputWriter), the recovery sweep failing that.
      if (!started) return null;
      const { turnSeq, firstItemSeq } = started;
      const { turn, run } = await this.turns.startTurn(manager, {
        turnId,
        runId,
        sessionId,
        seq: turnSeq,
        agentId: input.config.agent_id,
        model: input.config.model,
        inputIds: batch.map((i) => i.id),
        config: input.config,
        leaseOwner: owner,
        leaseMs: this.config.runLeaseMs,
        at: now,
        accountId,
      });
      await this.inputs.markConsumed(
        manager,
        batch.map((i) => i.id),
        turn.id,
        run.id,
        now,
      );
      const userItems = await this.items.insertItems(manager, firstItemSeq, newItems.map((item) => ({ ...item, turnId: turn.id, runId: run.id })));
      const filelessMessageIds = await this.attachments.bindToMessages(manager, batch, userItems);
      // The documented order: run created, turn created, turn in progress, then the turn's items.
      const events: OutgoingEvent[] = [turnEvents.run('created', run), turnEvents.turn('created', turn), turnEvents.turn('in_progress', turn)];
      const receipts = receiptsOf(batch);
      userItems.forEach((item, index) => events.push(turnEvents.item('added', item, index, receipts), turnEvents.item('done', item, index, receipts)));
      return {
        turn,
        run,
        lease: { runId: run.id, owner, epoch: run.epoch },
        config: input.config,
        lastInputSeq: lastReceivedSeq(batch, '0'),
        outputIndex: userItems.length,
        steps: [],
        trustedTools: session.trustedTools,
        fresh: true,
        filelessMessageIds,
        batch: await this.outbox.append(manager, sessionId, events, { epoch: run.epoch }),
      };
    });
  }

  /** Leases the active turn's unleased run (after a crash or a release), if it has one. */
  private async takeOver(manager: EntityManager, turn: TurnEntity, owner: string, trustedTools: string[]): Promise<HeldTurn | null> {
    const run = await this.runs.takeOver(manager, turn.sessionId, owner, this.config.runLeaseMs);
    if (!run) return null;
    return {
      turn,
      run,
      lease: { runId: run.id, owner, epoch: run.epoch },
      config: run.config as FrozenInputConfig,
      lastInputSeq: await this.inputs.lastConsumedSeq(manager, turn.id),
      outputIndex: await this.items.countItems(manager, turn.id),
      steps: await this.steps.stepsSinceLastInput(manager, turn.id),
      trustedTools,
      fresh: false,
      filelessMessageIds: [],
      batch: { sessionId: turn.sessionId, rows: [] },
    };
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
