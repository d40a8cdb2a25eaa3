import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import { isUuid, prepared, preparedUpTo } from '#libs/database';
import { DomainError } from '#libs/errors';
import { EventOutbox, type OutboxRow } from '#libs/events';
import { acceptanceSessionColumns, acceptedReceipt, acceptingInput, acceptInputGuarded, AfterCommit, type IdempotencyScope, IdempotencyService, type IdempotentResponse, InputsRepository, mayHaveActiveTurn, type MessagePlan, type MessageSpec, type Nudge, planMessage, readForAcceptance, type ReadForAcceptance, receiptLookup, type ReceiptRow, SessionControls, turnEvents, visibleSessionRead } from '#libs/engine';
import { tracingOn } from '#libs/telemetry';
import type { InlineImageBatch } from '../inline-images.js';
import { StorageQuota } from '../storage/storage-totals.js';
import { type Accepted, Acceptance } from './acceptance.js';

/** What a message's acceptance answered, and whether it steers into the running turn (its worker is told). */
export interface AcceptedMessage {
  result: IdempotentResponse;
  steersRunningTurn: boolean;
}

/** The receipt columns of the acceptance read (`receiptLookup`'s), qualified. */
const RECEIPT_COLUMNS = 'rc.request_hash, rc.response_status, rc.response_body, rc.receipt, rc.session_id, rc.session_deleted, rc.expired';

/**
 * How a message (a follow-up or a steer) is accepted, in as few statements as its case allows.
 *
 * The common case (no turn of the session may be active, no file to bind) costs two statements:
 * one read answers both the owner-scoped session lookup and the key's receipt, and one write is
 * the whole acceptance, its own transaction (durable when it returns, `synchronous_commit` on): the
 * session's counter update, guarded on the row version the read saw, takes the session lock; the
 * input, the outbox event (and its webhook deliveries) and the receipt are inserted joined with it.
 * Whatever changed the session since the read (a claim, a settle, a setting, a concurrent input)
 * fails the guard and nothing is written. A concurrent duplicate of the key either fails that
 * guard or, committed first, fails the whole statement on the receipt's unique key (a plain insert,
 * never ON CONFLICT, which would leave the statement's other writes done); either way the key's
 * first response is replayed. An outbox row another writer appended after the statement's
 * snapshot fails it on the outbox key. In each case nothing of it was written, and the locking
 * path below decides afresh.
 *
 * Otherwise (a turn may be active: the mode and the refusals depend on it; files to bind; an
 * expired receipt to take over; a lost race) the locking path: one transaction under the session
 * lock (`SessionControls.acceptMessage`), as every control is accepted.
 */
@Injectable()
export class MessageAcceptance {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly idempotency: IdempotencyService,
    private readonly inputs: InputsRepository,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
    private readonly acceptance: Acceptance,
    private readonly controls: SessionControls,
    private readonly quota: StorageQuota,
  ) {}

  accept(principal: Principal, sessionId: string, key: string, intent: unknown, spec: MessageSpec, images: InlineImageBatch): Promise<AcceptedMessage> {
    // Tracing off (the default): straight on, no closure or extra promise per message.
    if (!tracingOn()) return this.acceptMessage(principal, sessionId, key, intent, spec, images);
    // On: inside an `accept_input` span, whose context the input stores.
    return acceptingInput(() => this.acceptMessage(principal, sessionId, key, intent, spec, images));
  }

  private async acceptMessage(principal: Principal, sessionId: string, key: string, intent: unknown, spec: MessageSpec, images: InlineImageBatch): Promise<AcceptedMessage> {
    // An id that is not a UUID names no session (and must not reach Postgres as one).
    if (!isUuid(sessionId)) throw DomainError.notFound(`Session ${sessionId}`);
    const scope = Acceptance.scopeOf(principal, IdempotencyService.eventScope(sessionId), key, intent);
    // Files to bind need the input's row before they are bound: the locking path.
    if (images.fileIds.length > 0 || spec.attachmentFileIds.length > 0) return this.locked(principal, sessionId, scope, intent, spec, images, false, this.quota.on);
    const { session, receipt } = await this.read(principal.userId, sessionId, scope);
    const earlier = IdempotencyService.decide(receipt, scope);
    if (earlier) return { result: earlier, steersRunningTurn: false };
    if (!session) throw DomainError.notFound(`Session ${sessionId}`);
    // The storage quota (when set: off, no statement): after the key's receipt (a replay replays), before anything is written.
    if (this.quota.on) await this.quota.admit(principal.userId);
    // The session's overview rules an active turn out: nothing to gate on, nothing to steer into.
    if (receipt === null && !mayHaveActiveTurn(session.session.currentTurn)) {
      const plan = planMessage(session.session, session.workdirDeleted, null, spec);
      const written = await this.write(scope, session, plan, spec);
      if (written) return { result: written, steersRunningTurn: false };
      return this.locked(principal, sessionId, scope, intent, spec, images, false);
    }
    // The read found no live receipt: the locking path need not read the key again.
    return this.locked(principal, sessionId, scope, intent, spec, images, receipt === null);
  }

  /** One statement: the owner's session (if visible) and the key's receipt (if any, expired ones too). */
  private async read(ownerId: string, sessionId: string, scope: IdempotencyScope): Promise<{ session: ReadForAcceptance | null; receipt: ReceiptRow | null }> {
    const [row] = (await this.dataSource.query(
      prepared(`SELECT ${acceptanceSessionColumns('v')}, ${RECEIPT_COLUMNS}
       FROM (SELECT 1) AS one
       LEFT JOIN LATERAL (${visibleSessionRead('$1', '$2')}) AS v ON true
       LEFT JOIN LATERAL (${receiptLookup('$3', '$4', '$5')}) AS rc ON true`),
      [sessionId, ownerId, scope.ownerId, scope.scope, scope.key],
    )) as Record<string, unknown>[];
    if (!row) return { session: null, receipt: null };
    return { session: readForAcceptance(row), receipt: row.request_hash === null ? null : (row as unknown as ReceiptRow) };
  }

  /** The one-statement acceptance; null when it wrote nothing (the session changed since `read`, or another writer appended to its outbox). */
  private async write(scope: IdempotencyScope, seen: ReadForAcceptance, plan: MessagePlan, spec: MessageSpec): Promise<IdempotentResponse | null> {
    const { session, version } = seen;
    const receivedAt = new Date();
    const gate = 'acc_session';
    const SESSION_PARAMS = 4;
    const input = this.inputs.insertionFrom(
      this.dataSource.manager,
      { sessionId: session.id, mode: plan.mode, priority: plan.resumes ? 1 : 0, messages: spec.messages, attachmentFileIds: [], config: plan.config, receivedAt },
      { cte: gate, seqColumn: 'input_seq' },
      SESSION_PARAMS + 1,
    );
    const receipt = acceptedReceipt(session.id, input.row.id);
    let next = SESSION_PARAMS + 1 + input.values.length;
    // The relay nudges the queue for this row, should the nudge after commit be lost.
    const events = this.outbox.insertion(session.id, [turnEvents.accepted(receipt)], { nudge: true }, next, gate);
    next += events.values.length;
    const stored = this.idempotency.receiptInsert(scope, { status: 202, body: receipt, sessionId: session.id, receipt }, next, { takeover: false, gate });
    const sql = `WITH ${gate} AS (${acceptInputGuarded(1)}),
       acc_input AS (${input.sql}),
       ${events.ctes},
       acc_receipt AS (${stored.sql})
       ${events.select}`;
    let rows: OutboxRow[];
    try {
      rows = (await this.dataSource.query(preparedUpTo(events.rows, sql), [
        session.id,
        version,
        receivedAt,
        plan.resumes,
        ...input.values,
        ...events.values,
        ...stored.values,
      ])) as OutboxRow[];
    } catch (error) {
      if (IdempotencyService.isDuplicate(error)) return IdempotencyService.decide(await this.idempotency.lookup(scope), scope);
      if (EventOutbox.isSeqRace(error)) return null;
      throw error;
    }
    if (rows.length === 0) return null;
    const nudges: Nudge[] = [{ kind: 'queue' }];
    // Not waited for: the response never waits on Redis.
    void this.afterCommit.send({ batch: this.outbox.batchOf(session.id, rows, { nudge: true }), nudges });
    return { status: 202, body: stored.body, replayed: false, receipt, sessionId: session.id };
  }

  /**
   * The locking path's work: the message accepted under the session lock, in the caller's
   * transaction (`Acceptance.accept`'s, or one composing it with writes of its own, e.g. an
   * automation's invocation; then under the session's event scope, `IdempotencyService.eventScope`).
   * `images`: the message's inline images, bound to its input (none: null).
   */
  lockedWork(principal: Principal, sessionId: string, spec: MessageSpec, images: InlineImageBatch | null): { work: (manager: EntityManager) => Promise<Accepted>; steersRunningTurn: () => boolean } {
    let steersRunningTurn = false;
    const work = async (manager: EntityManager): Promise<Accepted> => {
      // Inline images are bound to the input's row below: then it is inserted first.
      const bound = images !== null && images.fileIds.length > 0;
      const accepted = await this.controls.acceptMessage(manager, principal.userId, sessionId, { ...spec, insertWithReceipt: !bound });
      if (images) await images.bind(manager, sessionId, accepted.input.id);
      steersRunningTurn = accepted.steersRunningTurn;
      const receipt = acceptedReceipt(sessionId, accepted.input.id);
      const nudges: Nudge[] = accepted.input.attachmentStatus === 'preparing' ? [{ kind: 'prepare', inputId: accepted.input.id }, { kind: 'queue' }] : [{ kind: 'queue' }];
      // A steer into the running turn: its worker hears it at the next boundary (the heartbeat, failing the signal).
      if (accepted.steersRunningTurn) nudges.push({ kind: 'steer' });
      return { status: 202, body: receipt, sessionId, receipt, events: [turnEvents.accepted(receipt)], nudges, riding: accepted.riding ? [accepted.riding] : [] };
    };
    return { work, steersRunningTurn: () => steersRunningTurn };
  }

  /** The locking path: one transaction under the session lock, the key read again unless `looked`. */
  private async locked(
    principal: Principal,
    sessionId: string,
    scope: IdempotencyScope,
    intent: unknown,
    spec: MessageSpec,
    images: InlineImageBatch,
    looked: boolean,
    admit = false,
  ): Promise<AcceptedMessage> {
    const locked = this.lockedWork(principal, sessionId, spec, images);
    // `admit`: the storage quota is still to check, once no receipt answers the key (before the images are staged).
    const staging = admit ? this.quota.gate(principal.userId, images.staging) : images.staging;
    const result = await this.acceptance.accept(principal, scope.scope, scope.key, intent, locked.work, staging, looked);
    return { result, steersRunningTurn: !result.replayed && locked.steersRunningTurn() };
  }
}
