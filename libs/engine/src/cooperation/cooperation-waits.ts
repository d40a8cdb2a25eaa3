import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId, unixSeconds } from '#libs/database';
import { EventOutbox, type OutboxBatch, type OutgoingEvent } from '#libs/events';
import { type SessionEntity } from '../tables/session.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { TreeRepository } from './tree.repository.js';
import { type CommittedStep, type ToolCallSpec, type TurnEntity, type Waitpoint } from '../tables/turn.entities.js';
import { type Lease } from '../claims/lease.js';
import { RunsRepository } from '../tables/runs.repository.js';
import { StepsRepository } from '../tables/steps.repository.js';
import { toCurrentTurn } from '../views/projections.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Committed, Nudge } from '../transaction/after-commit.js';
import { resolveWaits } from './cooperation-rules.js';
import type { HeldTurn } from '../claims/held-turn.js';
import { turnEvents } from '../steps/turn-events.js';
import { resumeAtWaitpoint } from '../waitpoints/waitpoint-resume.js';

/** How many queued members a freed slot nudges (the claim's gate admits them in order). */
const TREE_NUDGES = 20;

/** A coordinator's wait: resolved at once (a waitpoint step the planner reads), or the run suspended until members settle. */
export type Awaited = { resolved: CommittedStep; batch: OutboxBatch } | { suspended: OutboxBatch; nudges: Nudge[] };

/**
 * The cooperation wait and its durable wake-up. A coordinator's `wait_subagents` either resolves
 * at once (every member it waits for has settled) or suspends its run: the turn stays in_progress
 * with a `cooperation` waitpoint and no worker holds it (nothing polls). A member's ended turn
 * leaves a signal in its own transaction (`memberTurnEnded`); delivering it (after commit, or by
 * the recovery sweep when that was lost) takes the parent's lock, announces the member's state on
 * the parent's stream and, once the wait resolves, records the members' results as the
 * waitpoint's step and wakes the turn in a new run for any worker. Both sides decide under the
 * parent's lock, so a member settling while its coordinator suspends is never missed.
 */
@Injectable()
export class CooperationWaits {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly tree: TreeRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly steps: StepsRepository,
    private readonly outbox: EventOutbox,
    private readonly config: AppConfig,
  ) {}

  /** The wait calls of a coordinator's turn, under its lease. 'cancelled' when a cancel came first; null when the lease is gone. */
  async awaitMembers(held: HeldTurn, lease: Lease, calls: ToolCallSpec[]): Promise<Awaited | 'cancelled' | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      if (await this.turns.cancellationPending(manager, held.turn.id)) return 'cancelled' as const;
      const now = new Date();
      const waitpoint: Waitpoint = {
        id: newId(),
        kind: 'cooperation',
        run_id: lease.runId,
        created_at: unixSeconds(now),
        tool_calls: calls.map(({ call_id, name, arguments: args }) => ({ call_id, name, arguments: args })),
      };
      const results = resolveWaits(waitpoint.tool_calls ?? [], await this.tree.children(manager, sessionId));
      if (results) {
        const step: CommittedStep = { runId: lease.runId, kind: 'waitpoint', status: 'completed', ref: waitpoint.id, output: { kind: 'cooperation', response: { type: 'cooperation', results } } };
        if (!(await this.steps.recordStep(manager, lease, { ...step, turnId: held.turn.id, sessionId, input: { kind: 'cooperation' }, at: now }))) return null;
        return { resolved: step, batch: { sessionId, rows: [] } };
      }
      if (!(await this.runs.suspendRun(manager, lease, held.turn.id, waitpoint, now))) return null;
      const usage = await this.runs.usageOf(manager, lease.runId, held.turn.id);
      const turn: TurnEntity = { ...held.turn, status: 'in_progress', waitpoint, currentRunId: lease.runId, usage: usage.turn };
      // A waiting coordinator holds no slot of its account's cap either (its members need the room).
      const { crowdedAccount } = await this.sessions.recordTurnFreed(manager, sessionId, toCurrentTurn(turn), 0, now, this.config.maxActiveTurnsPerOwner);
      const run = { ...held.run, id: lease.runId, status: 'requires_action' as const, completedAt: now, leaseOwner: null, leaseExpiresAt: null, usage: usage.run };
      const events: OutgoingEvent[] = [turnEvents.run('requires_action', run), turnEvents.turnState(turn)];
      // A member coordinator that waits frees its slot of the tree's cap: the tree's queued members may start.
      const nudges: Nudge[] = session && session.depth > 0 ? [{ kind: 'tree', rootSessionId: session.rootSessionId }] : [];
      if (crowdedAccount) nudges.push({ kind: 'account', accountId: crowdedAccount });
      return { suspended: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), nudges };
    });
  }

  /**
   * Delivers the parent's undelivered signals (one transaction under its lock): each member's
   * ended turn on the parent's stream, and the parent's turn woken once its wait resolves. Null
   * when there was nothing to deliver.
   */
  async deliver(parentId: string): Promise<Committed | null> {
    return this.dataSource.transaction(async (manager) => {
      const parent = await this.sessions.lock(manager, parentId);
      if (!parent) return null;
      const active = await this.turns.activeTurn(manager, parentId);
      const waiting = active?.status === 'in_progress' && active.waitpoint?.kind === 'cooperation' ? { turn: active, waitpoint: active.waitpoint } : null;
      const results = waiting ? resolveWaits(waiting.waitpoint.tool_calls ?? [], await this.tree.children(manager, parentId)) : null;
      // A member coordinator woken takes a slot of its tree's cap again: while the tree has none
      // free, its signals stay undelivered and the sweep delivers them again later.
      if (results && parent.depth > 0) {
        const gate = await this.tree.admission(manager, parent);
        if (gate.cap !== null && gate.running >= gate.cap) return null;
      }
      const signals = await this.tree.takeSignals(manager, parentId);
      const events: OutgoingEvent[] = signals.map((signal) => turnEvents.subagentState(signal));
      const nudges: Nudge[] = [];
      if (waiting && results) {
        // The members' results as the waitpoint's step; the turn continues in a new run for any worker.
        const woken = await resumeAtWaitpoint(manager, { steps: this.steps, turns: this.turns, sessions: this.sessions }, waiting.turn, waiting.waitpoint, { type: 'cooperation', results });
        events.push(...woken.events);
        if (woken.runId) nudges.push({ kind: 'takeover', runId: woken.runId });
      }
      if (events.length === 0) return null;
      return { batch: await this.outbox.append(manager, parentId, events), nudges };
    });
  }

  /**
   * A member's turn ended (call in the transaction that ended it, under the member's lock only):
   * the signal for its parent, and what to nudge after commit — the parent's delivery, and the
   * tree's queued members (a slot freed). Nothing for a root: plain sessions pay no statement.
   */
  async memberTurnEnded(manager: EntityManager, session: Pick<SessionEntity, 'id' | 'depth' | 'rootSessionId'> | null, turn: Pick<TurnEntity, 'id' | 'status'>): Promise<Nudge[]> {
    if (!session || session.depth === 0) return [];
    return afterSignal(await this.tree.signalTurnEnded(manager, session.id, turn.id, turn.status), session.rootSessionId);
  }

  /** A member settled without a turn ending (nothing left to run): the same nudges, from a signal with no turn. */
  async memberSettled(manager: EntityManager, session: Pick<SessionEntity, 'id' | 'depth' | 'rootSessionId'>): Promise<Nudge[]> {
    if (session.depth === 0) return [];
    return afterSignal(await this.tree.signalSettled(manager, session.id), session.rootSessionId);
  }

  /** Each tree's next queued member that waited past the grace period (the sweep nudges it; a lost nudge is re-sent). */
  async queuedHeads(graceMs: number, limit: number): Promise<string[]> {
    return this.tree.queuedTreeHeads(graceMs, limit);
  }

  /** The tree's members waiting for a slot, oldest first (read after commit to nudge them). */
  async queuedMembers(rootId: string): Promise<string[]> {
    return this.tree.queuedMembers(rootId, TREE_NUDGES);
  }

  /** Parents whose signals stayed undelivered past the grace period (the sweep delivers them). */
  async undelivered(graceMs: number, limit: number): Promise<string[]> {
    return this.tree.parentsWithUndeliveredSignals(graceMs, limit);
  }
}

/** A member's signal written: its parent's delivery, and the tree's queued members (a slot freed). */
function afterSignal(parentId: string | null, rootSessionId: string): Nudge[] {
  return parentId ? [{ kind: 'cooperation', parentSessionId: parentId }, { kind: 'tree', rootSessionId }] : [];
}
