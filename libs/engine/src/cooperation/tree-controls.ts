import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '#libs/errors';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { type SessionEntity } from '../tables/session.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { TreeRepository } from './tree.repository.js';
import { type TurnEntity } from '../tables/turn.entities.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Committed, Nudge } from '../transaction/after-commit.js';
import { SessionControls } from '../controls/session-controls.js';
import { turnEvents } from '../steps/turn-events.js';

/** A tree locked for a control: its root first, then each level's members (parent before child). */
export interface LockedTree {
  root: SessionEntity;
  /** Root first, then members by depth. */
  sessions: SessionEntity[];
}

/**
 * Tree-wide controls (stop all, continue): `yuxi.session.tree.stop` cancels every
 * active turn of the tree as a cancel would — the cancel requests to running turns first, then the
 * waitpoints cleared (waiting turns end at once) — and pauses every queue; `continue`, once
 * nothing of the tree is still active, resumes the retained queues (cancelled turns stay
 * cancelled). Each runs in the caller's transaction, holding the tree's locks (`lock`), and
 * returns what it committed on each session for after commit.
 */
@Injectable()
export class TreeControls {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly tree: TreeRepository,
    private readonly turns: TurnsRepository,
    private readonly controls: SessionControls,
    private readonly outbox: EventOutbox,
  ) {}

  /**
   * Locks the tree of `session`: the root, then one fresh statement per depth (a member of depth d+1
   * is created only under its parent's lock, which the previous level already holds, so none is missed).
   */
  async lock(manager: EntityManager, session: SessionEntity): Promise<LockedTree> {
    const root = await this.sessions.lock(manager, session.rootSessionId);
    if (!root) throw DomainError.notFound(`Session ${session.id}`);
    const sessions = [root];
    for (let depth = 1; ; depth += 1) {
      const level = await this.tree.lockLevel(manager, root.id, depth);
      if (level.length === 0) break;
      sessions.push(...level);
    }
    return { root, sessions };
  }

  async stop(manager: EntityManager, { root, sessions }: LockedTree): Promise<Committed[]> {
    const actives = new Map<string, TurnEntity>();
    for (const session of sessions) {
      const active = await this.turns.activeTurn(manager, session.id);
      if (active) actives.set(session.id, active);
    }
    const events = new Map<string, OutgoingEvent[]>(sessions.map((s) => [s.id, []]));
    const nudges = new Map<string, Nudge[]>(sessions.map((s) => [s.id, []]));
    // The cancel requests first (running turns stop at their next boundary)…
    for (const session of sessions) {
      const active = actives.get(session.id);
      if (!active || active.waitpoint !== null || active.cancellationPending) continue;
      const { turn, runId } = await this.controls.cancelTurn(manager, session, { turnId: active.id });
      events.get(session.id)!.push(turnEvents.turnState(turn));
      if (runId) nudges.get(session.id)!.push({ kind: 'cancel', runId });
    }
    // …then the waitpoints cleared: a waiting turn (a person, the client, or its members) ends at once.
    for (const session of sessions) {
      const active = actives.get(session.id);
      if (!active || active.waitpoint === null) continue;
      const cancelled = await this.controls.cancelTurn(manager, session, { turnId: active.id });
      events.get(session.id)!.push(turnEvents.turnState(cancelled.turn), ...cancelled.events);
      nudges.get(session.id)!.push(...cancelled.nudges);
    }
    for (const session of sessions) if (!session.queuePaused) await this.sessions.setQueuePaused(manager, session.id, true);
    await this.tree.setStopped(manager, root.id, true);
    return this.commit(manager, sessions, events, nudges);
  }

  async continue(manager: EntityManager, { root, sessions }: LockedTree): Promise<Committed[]> {
    const active: string[] = [];
    for (const session of sessions) {
      const turn = await this.turns.activeTurn(manager, session.id);
      if (turn) active.push(turn.id);
    }
    gateTreeContinue(root.treeStoppedAt, active);
    await this.tree.setStopped(manager, root.id, false);
    const nudges = new Map<string, Nudge[]>();
    for (const session of sessions) {
      if (!session.queuePaused) continue;
      await this.sessions.setQueuePaused(manager, session.id, false);
      if (session.pendingInputCount > 0) nudges.set(session.id, [{ kind: 'queue' }]);
    }
    return this.commit(manager, sessions, new Map(), nudges);
  }

  /** Each session's events in its own outbox (the control's own session included), with its nudges. */
  private async commit(manager: EntityManager, sessions: SessionEntity[], events: Map<string, OutgoingEvent[]>, nudges: Map<string, Nudge[]>): Promise<Committed[]> {
    const committed: Committed[] = [];
    for (const session of sessions) {
      const own = events.get(session.id) ?? [];
      const sent = nudges.get(session.id) ?? [];
      if (own.length === 0 && sent.length === 0) continue;
      committed.push({ batch: await this.outbox.append(manager, session.id, own), nudges: sent });
    }
    return committed;
  }
}

/**
 * Whether a stopped tree may continue: only once it was stopped, and only after every turn
 * of it has ended (a cancellation still being cleaned up keeps it stopping). Pure.
 */
export function gateTreeContinue(stoppedAt: Date | null, activeTurnIds: readonly string[]): void {
  if (stoppedAt === null) throw new DomainError('state_conflict', 'The tree is not stopped');
  if (activeTurnIds.length > 0) throw new DomainError('state_conflict', 'Work of the tree is still settling; continue once its turns have ended', { active_turns: [...activeTurnIds] });
}
