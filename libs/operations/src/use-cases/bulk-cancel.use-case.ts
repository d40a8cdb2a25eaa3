import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditLog } from '#libs/audit';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { EventOutbox } from '#libs/events';
import { acceptedReceipt, AfterCommit, type CancellableFilter, type Committed, IdempotencyService, type IdempotentResponse, type Nudge, SessionControls, SessionsRepository, turnEvents, turnSeconds, TurnsRepository } from '#libs/engine';
import { IdempotentWrite } from '#libs/protocol';
import { metrics } from '#libs/metrics';
import { BULK_CANCEL_MAX, BULK_CANCEL_SAMPLE, BULK_CANCEL_STATUSES, type BulkCancelFilterDto, type BulkCancelResultDto, type BulkCancelSkippedDto } from '../dto/bulk-cancel.dto.js';

/** The idempotency scope of bulk cancels: one key per caller names one bulk cancel. */
const SCOPE = 'admin.sessions.bulk_cancel';

type Outcome = { cancelled: true } | { cancelled: false; code: string };

/**
 * An operator's bulk cancel: the sessions matching a filter (with an active turn not already being
 * cancelled) are selected, oldest first, at most BULK_CANCEL_MAX a call. A dry run only counts. A
 * real run cancels each session's selected turn through the lifecycle's cancel (SessionControls,
 * as a client's cancel event does), one transaction per session with its accepted and state
 * events in the outbox and an audit entry naming the operator; after commit the worker is told to
 * stop. The whole call is idempotent by its key: a replay answers the first response, and a retry
 * after a failure part-way selects only what is left (cancelled turns no longer match).
 */
@Injectable()
export class BulkCancelSessions {
  private readonly logger = new Logger(BulkCancelSessions.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly controls: SessionControls,
    private readonly outbox: EventOutbox,
    private readonly afterCommit: AfterCommit,
    private readonly audit: AuditLog,
    private readonly idempotentWrite: IdempotentWrite,
  ) {}

  async dryRun(filter: BulkCancelFilterDto): Promise<BulkCancelResultDto> {
    const { total, targets } = await this.sessions.cancellable(toFilter(filter), BULK_CANCEL_SAMPLE);
    return { object: 'admin.bulk_cancel', dry_run: true, matched: total, limit: BULK_CANCEL_MAX, session_ids: targets.map((t) => t.sessionId), skipped: [], has_more: total > BULK_CANCEL_MAX };
  }

  async execute(principal: Principal, filter: BulkCancelFilterDto, rawKey: string | undefined): Promise<IdempotentResponse> {
    const key = IdempotencyService.requireKey(rawKey);
    let result: BulkCancelResultDto | null = null;
    return this.idempotentWrite.execute(
      { ownerId: principal.userId, scope: SCOPE, key, requestHash: IdempotencyService.hashIntent({ operation: SCOPE, filter }) },
      // The receipt's own transaction only stores the answer: each session was cancelled in a transaction of its own.
      async () => ({ status: 200, body: result, sessionId: null, receipt: null }),
      // Runs only when no receipt answers the key.
      async () => {
        result = await this.cancelMatching(principal, filter, key);
      },
    );
  }

  private async cancelMatching(principal: Principal, filter: BulkCancelFilterDto, key: string): Promise<BulkCancelResultDto> {
    const { total, targets } = await this.sessions.cancellable(toFilter(filter), BULK_CANCEL_MAX);
    const cancelled: string[] = [];
    const skipped: BulkCancelSkippedDto[] = [];
    for (const target of targets) {
      const outcome = await this.cancelOne(principal, target, key);
      if (outcome.cancelled) cancelled.push(target.sessionId);
      else skipped.push({ session_id: target.sessionId, code: outcome.code });
    }
    return { object: 'admin.bulk_cancel', dry_run: false, matched: total, limit: BULK_CANCEL_MAX, session_ids: cancelled, skipped, has_more: total > targets.length };
  }

  /** One session, in its own transaction under its lock: the selected turn only (a later turn is never cancelled by this call). */
  private async cancelOne(principal: Principal, target: { sessionId: string; turnId: string }, key: string): Promise<Outcome> {
    let committed: Committed | null = null;
    let ended: { seconds: number } | null = null;
    try {
      await this.dataSource.transaction(async (manager) => {
        const session = await this.sessions.lock(manager, target.sessionId);
        if (!session || session.deletedAt !== null) throw DomainError.notFound(`Session ${target.sessionId}`);
        // Already asked (by another call, or a retry of this one still running): asked once, audited once.
        if ((await this.turns.findTurn(manager, target.turnId))?.cancellationPending) throw new DomainError('state_conflict', 'The turn is already being cancelled');
        const { turn, runId, events, nudges } = await this.controls.cancelTurn(manager, session, { turnId: target.turnId });
        const receipt = { ...acceptedReceipt(session.id, null), turn_id: turn.id, run_id: runId };
        await this.audit.record(manager, {
          actorId: principal.actorId,
          keyId: principal.keyId,
          action: 'session.cancel_requested',
          targetType: 'session',
          targetId: session.id,
          details: { turn_id: turn.id, owner_id: session.ownerId, bulk: true, idempotency_key: key },
        });
        // As a client's cancel event: accepted, then the turn's state (cancellation_pending), on the session's stream.
        const batch = await this.outbox.append(manager, session.id, [turnEvents.accepted(receipt), turnEvents.turnState(turn), ...events]);
        const stop: Nudge[] = runId !== null && turn.status !== 'cancelled' ? [{ kind: 'cancel', runId }] : [];
        committed = { batch, nudges: [...nudges, ...stop] };
        if (turn.status === 'cancelled') ended = { seconds: turnSeconds(turn) };
      });
    } catch (error) {
      // The turn ended (or the session was deleted) since the selection: left as it is, reported.
      if (error instanceof DomainError && (error.code === 'state_conflict' || error.code === 'not_found')) return { cancelled: false, code: error.code };
      throw error;
    }
    if (ended) metrics.turnFinished('cancelled', (ended as { seconds: number }).seconds);
    if (committed) void this.afterCommit.send(committed).catch((error: unknown) => this.logger.warn(`after-commit of a bulk cancel failed: ${String(error)}`));
    return { cancelled: true };
  }
}

function toFilter(filter: BulkCancelFilterDto): CancellableFilter {
  return {
    turnStatuses: filter.status ? [filter.status] : [...BULK_CANCEL_STATUSES],
    agentId: filter.agent_id,
    ownerId: filter.owner_id,
    createdBefore: filter.created_before === undefined ? undefined : new Date(filter.created_before * 1000),
    createdAfter: filter.created_after === undefined ? undefined : new Date(filter.created_after * 1000),
  };
}
