import { Injectable, Logger } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { type IdempotentResponse, InputsService } from '#libs/inputs';
import { RunSignals } from '#libs/queue';
import { SessionsService } from '#libs/sessions';
import { toTurnDto, type TurnEntity, TurnsService } from '#libs/turns';
import type { CancelInputEventDto, CancelTurnEventDto, ContinueQueueEventDto, PromoteInputEventDto } from '../dto/update-session.dto.js';
import { Acceptance, acceptedReceipt } from './acceptance.js';

/** Removes one pending input from the queue; it never becomes a turn. The receipt points at that input. */
@Injectable()
export class CancelInput {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly sessions: SessionsService,
    private readonly inputs: InputsService,
  ) {}

  async execute(principal: Principal, sessionId: string, event: CancelInputEventDto, key: string): Promise<IdempotentResponse> {
    return this.acceptance.control(principal, sessionId, key, event, async (manager) => {
      const at = new Date();
      await this.inputs.cancelPending(manager, sessionId, event.input_id, at);
      await this.sessions.recordInputCancelled(manager, sessionId, at);
      return { receipt: acceptedReceipt(sessionId, event.input_id) };
    });
  }
}

/** Makes a pending follow-up a steer; repeating it on a pending steer is already satisfied. */
@Injectable()
export class PromoteInput {
  private readonly logger = new Logger(PromoteInput.name);

  constructor(
    private readonly acceptance: Acceptance,
    private readonly inputs: InputsService,
    private readonly turns: TurnsService,
    private readonly signals: RunSignals,
  ) {}

  async execute(principal: Principal, sessionId: string, event: PromoteInputEventDto, key: string): Promise<IdempotentResponse> {
    const result = await this.acceptance.control(principal, sessionId, key, event, async (manager) => {
      const active = await this.turns.activeTurn(manager, sessionId);
      if (active?.status === 'requires_action') throw new DomainError('state_conflict', 'The turn is waiting for an answer or approval');
      if (active?.cancellationPending) throw new DomainError('state_conflict', 'The turn is being cancelled');
      await this.inputs.promote(manager, sessionId, event.input_id);
      return { receipt: acceptedReceipt(sessionId, event.input_id), nudge: true };
    });
    if (!result.replayed) void this.signals.announceSteer(sessionId).catch((error: unknown) => this.logger.warn(`steer signal not sent: ${String(error)}`));
    return result;
  }
}

/**
 * Cancels a turn: the target (given, or the active turn) is fixed in this transaction, so a replay
 * cancels the same turn, never a later one. Pending inputs stay queued behind a pause.
 */
@Injectable()
export class CancelTurn {
  private readonly logger = new Logger(CancelTurn.name);

  constructor(
    private readonly acceptance: Acceptance,
    private readonly sessions: SessionsService,
    private readonly turns: TurnsService,
    private readonly signals: RunSignals,
  ) {}

  async execute(principal: Principal, sessionId: string, event: CancelTurnEventDto, key: string): Promise<IdempotentResponse> {
    const result = await this.acceptance.control(principal, sessionId, key, event, async (manager, session) => {
      const turnId = event.yuxi?.turn_id ?? (await this.turns.activeTurn(manager, sessionId))?.id;
      if (!turnId) throw new DomainError('state_conflict', 'The session has no active turn to cancel');
      const turn = await this.turns.requestCancel(manager, sessionId, turnId);
      if (!turn) {
        const ended = await this.turns.findTurn(manager, turnId);
        if (!ended || ended.sessionId !== sessionId) throw DomainError.notFound(`Turn ${turnId}`);
        throw new DomainError('state_conflict', `Turn ${turnId} has already ended`);
      }
      if (event.yuxi?.expected_run_id !== undefined && event.yuxi.expected_run_id !== turn.currentRunId) {
        throw new DomainError('state_conflict', 'expected_run_id is not the current run of the turn', { current_run_id: turn.currentRunId });
      }
      if (session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, sessionId, true);
      // In the outbox with the cancel itself, so it precedes the terminal event on every stream;
      // clients show "stopping" from here on (turn.yuxi.cancellation_pending).
      return {
        receipt: { ...acceptedReceipt(sessionId, null), turn_id: turn.id, run_id: turn.currentRunId },
        events: [{ type: 'yuxi.session.turn.state', turn_id: turn.id, turn: toTurnDetailState(turn) }],
      };
    });
    if (!result.replayed && result.receipt?.run_id) {
      void this.signals.requestCancel(result.receipt.run_id).catch((error: unknown) => this.logger.warn(`cancel signal not sent: ${String(error)}`));
    }
    return result;
  }
}

/** Resumes a paused queue after a cancellation settled, claiming its original head. */
@Injectable()
export class ContinueQueue {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly sessions: SessionsService,
    private readonly turns: TurnsService,
  ) {}

  async execute(principal: Principal, sessionId: string, event: ContinueQueueEventDto, key: string): Promise<IdempotentResponse> {
    return this.acceptance.control(principal, sessionId, key, event, async (manager, session) => {
      if (!session.queuePaused) throw new DomainError('state_conflict', 'The queue is not paused');
      if (await this.turns.activeTurn(manager, sessionId)) throw new DomainError('state_conflict', 'A turn is still active; continue after it settles');
      await this.sessions.setQueuePaused(manager, sessionId, false);
      return { receipt: acceptedReceipt(sessionId, null), nudge: true };
    });
  }
}

/** The turn projection plus the cancellation flag, as `yuxi.session.turn.state` carries it. */
function toTurnDetailState(turn: TurnEntity) {
  const dto = toTurnDto(turn);
  return { ...dto, yuxi: { ...dto.yuxi, cancellation_pending: turn.cancellationPending } };
}
