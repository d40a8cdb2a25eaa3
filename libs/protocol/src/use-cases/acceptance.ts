import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AuditLog } from '#libs/audit';
import type { Principal } from '#libs/auth';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { acceptedReceipt, type AcceptedReceipt, AfterCommit, type Committed, type IdempotencyScope, IdempotencyService, type IdempotentResponse, type Nudge, type SessionEntity, SessionsRepository, turnEvents } from '#libs/engine';
import { type AnsweringWrite, IdempotentWrite, type TransactionWork } from './idempotent-write.js';

/** What an accepting transaction produced besides its response: the events announcing it. */
export interface Accepted extends TransactionWork {
  events: OutgoingEvent[];
  /**
   * What the worker side is asked after commit: the queue may have something to claim, a run waits
   * to be taken over, an input's attachments wait to be prepared (the outbox relay and the recovery
   * sweep do each again, should a nudge be lost).
   */
  nudges: Nudge[];
  /** What the same transaction committed on other sessions (a tree control's members), sent after commit too. */
  also?: Committed[];
}

/** What a control event did under the session lock. */
export interface ControlOutcome {
  receipt: AcceptedReceipt;
  /** Events of the control itself, announced after its accepted event. */
  events?: OutgoingEvent[];
  /** The control may let the worker claim something (continue, promote), or created a run for a worker to take over (a resumed turn). */
  nudges?: Nudge[];
}

/**
 * Work of a submission outside the database (its inline images' blobs): staged only when no
 * receipt answers the key (a replay stores nothing), before the accepting transaction, and
 * discarded when that transaction did not commit this submission.
 */
export interface Staging {
  stage(): Promise<void>;
  discard(): Promise<void>;
}

/**
 * How every use case accepts work: at most once per idempotency key, in one transaction that also
 * writes the outbox events announcing it; after commit, not waited for, the events are published
 * and the worker nudged. Neither can lose anything: the outbox relay publishes what is left and
 * nudges for accepted inputs, and the sweep re-nudges idle queues. With Redis down a request still
 * answers at once.
 */
@Injectable()
export class Acceptance {
  constructor(
    private readonly idempotentWrite: IdempotentWrite,
    private readonly sessions: SessionsRepository,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
    private readonly audit: AuditLog,
  ) {}

  /** The idempotency scope of a principal's write: an operator acting for the owner keys its requests in its own name, so its keys and the owner's never meet. */
  static scopeOf(principal: Principal, scope: string, key: string, intent: unknown): IdempotencyScope {
    return { ownerId: principal.operatorFor ? principal.actorId : principal.userId, scope, key, requestHash: IdempotencyService.hashIntent(intent) };
  }

  /** `looked`: the caller's own read of the key found no live receipt (no second read). */
  async accept(
    principal: Principal,
    scope: string,
    key: string,
    intent: unknown,
    work: (manager: EntityManager) => Promise<Accepted>,
    staging?: Staging,
    looked = false,
  ): Promise<IdempotentResponse> {
    let committed: Committed | null = null;
    let staged = false;
    let result: IdempotentResponse;
    try {
      result = await this.idempotentWrite.execute(
        Acceptance.scopeOf(principal, scope, key, intent),
        this.announced(work, (done) => {
          committed = done;
        }),
        staging &&
          (async () => {
            staged = true;
            await staging.stage();
          }),
        looked,
      );
    } catch (error) {
      if (staged) await staging?.discard();
      throw error;
    }
    // Only a response this request committed is not a replay; otherwise the staging is nobody's.
    if (result.replayed && staged) await staging?.discard();
    // Not waited for: the response never waits on Redis.
    if (!result.replayed && committed) void this.afterCommit.send(committed);
    return result;
  }

  /**
   * The same acceptance inside a transaction the caller holds (one that composes it with writes of
   * its own): its key must be new (a receipt already there fails that transaction). What it
   * committed is the caller's to send once its transaction commits (`AfterCommit.send`).
   */
  async within(
    manager: EntityManager,
    principal: Principal,
    scope: string,
    key: string,
    intent: unknown,
    work: (manager: EntityManager) => Promise<Accepted>,
  ): Promise<{ result: IdempotentResponse; committed: Committed | null }> {
    let committed: Committed | null = null;
    const result = await this.idempotentWrite.within(
      manager,
      Acceptance.scopeOf(principal, scope, key, intent),
      this.announced(work, (done) => {
        committed = done;
      }),
    );
    return { result, committed };
  }

  /** The work with its outbox events written by the receipt's statement; `take` gets what to send after commit. */
  private announced(work: (manager: EntityManager) => Promise<Accepted>, take: (committed: Committed) => void): (manager: EntityManager) => Promise<TransactionWork> {
    return async (manager) => {
      const accepted = await work(manager);
      const { sessionId, events, nudges, also } = accepted;
      if (!sessionId) return accepted;
      if (events.length === 0) {
        take({ batch: { sessionId, rows: [] }, nudges, also });
        return accepted;
      }
      // The relay nudges the queue for a row that announced claimable work, should this request's nudge be lost.
      const options = { nudge: nudges.some((n) => n.kind === 'queue') };
      // The outbox rows are inserted by the receipt's statement (the session lock is held since the work took it).
      const answering: AnsweringWrite = {
        fragment: (first) => this.outbox.insertion(sessionId, events, options, first),
        take: (rows) => take({ batch: this.outbox.batchOf(sessionId, rows, options), nudges, also }),
      };
      return { ...accepted, answering };
    };
  }

  /** A control event of a session: under the session lock, announced with an accepted event (and any events of its own). */
  async control(
    principal: Principal,
    sessionId: string,
    key: string,
    event: { type: string },
    apply: (manager: EntityManager, session: SessionEntity) => Promise<ControlOutcome>,
  ): Promise<IdempotentResponse> {
    return this.accept(principal, IdempotencyService.eventScope(sessionId), key, { operation: event.type, session_id: sessionId, event }, async (manager) => {
      const session = await this.sessions.lockVisible(manager, principal.userId, sessionId);
      const outcome = await apply(manager, session);
      await this.auditOperator(manager, principal, sessionId, event, outcome.receipt.turn_id);
      return {
        status: 202,
        body: outcome.receipt,
        sessionId,
        receipt: outcome.receipt,
        events: [turnEvents.accepted(outcome.receipt), ...(outcome.events ?? [])],
        nudges: outcome.nudges ?? [],
      };
    });
  }

  /**
   * A tree control (`yuxi.session.tree.*`) sent to any session of the tree: the caller's session
   * read for the owner check (404 otherwise), then the whole tree locked, root first and level by
   * level. Receipted on that session like every control, with no accepted event: these controls
   * are not SSE output; each member's own events go to its own stream.
   */
  async treeControl(
    principal: Principal,
    sessionId: string,
    key: string,
    event: { type: string },
    apply: (manager: EntityManager, target: SessionEntity) => Promise<Committed[]>,
  ): Promise<IdempotentResponse> {
    return this.accept(principal, IdempotencyService.eventScope(sessionId), key, { operation: event.type, session_id: sessionId, event }, async (manager) => {
      const target = await this.sessions.getVisible(principal.userId, sessionId);
      const also = await apply(manager, target);
      await this.auditOperator(manager, principal, sessionId, event);
      const receipt = acceptedReceipt(sessionId, null);
      return { status: 202, body: receipt, sessionId, receipt, events: [], nudges: [], also };
    });
  }

  /** An operator's accepted control on another owner's session, in the trail in the same transaction (no action without its entry). */
  private async auditOperator(manager: EntityManager, principal: Principal, sessionId: string, event: { type: string }, turnId: string | null = null): Promise<void> {
    if (!principal.operatorFor) return;
    await this.audit.record(manager, {
      actorId: principal.actorId,
      keyId: principal.keyId,
      action: 'session.operator_event',
      targetType: 'session',
      targetId: sessionId,
      details: { event_type: event.type, owner_id: principal.operatorFor.ownerId, role: principal.role, ...(turnId !== null ? { turn_id: turnId } : {}) },
    });
  }
}

export { acceptedReceipt } from '#libs/engine';
