import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { type IdempotentResponse, SessionControls, type TurnEntity, turnEvents, turnSeconds } from '#libs/engine';
import { metrics } from '#libs/metrics';
import type { CancelInputEventDto, CancelTurnEventDto, ContinueQueueEventDto, PromoteInputEventDto } from '../dto/update-session.dto.js';
import { Acceptance, acceptedReceipt } from './acceptance.js';

/** Removes one pending input from the queue; it never becomes a turn. The receipt points at that input. */
@Injectable()
export class CancelInput {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly controls: SessionControls,
  ) {}

  async execute(principal: Principal, sessionId: string, event: CancelInputEventDto, key: string): Promise<IdempotentResponse> {
    return this.acceptance.control(principal, sessionId, key, event, async (manager, session) => {
      const nudges = await this.controls.cancelInput(manager, session, event.input_id);
      return { receipt: acceptedReceipt(sessionId, event.input_id), nudges };
    });
  }
}

/** Makes a pending follow-up a steer; repeating it on a pending steer is already satisfied. */
@Injectable()
export class PromoteInput {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly controls: SessionControls,
  ) {}

  async execute(principal: Principal, sessionId: string, event: PromoteInputEventDto, key: string): Promise<IdempotentResponse> {
    const result = await this.acceptance.control(principal, sessionId, key, event, async (manager, session) => {
      await this.controls.promote(manager, session, event.input_id);
      // The promoted steer is announced to the running turn's worker after commit, like any nudge.
      return { receipt: acceptedReceipt(sessionId, event.input_id), nudges: [{ kind: 'queue' }, { kind: 'steer' }] };
    });
    return result;
  }
}

/**
 * Cancels a turn: the target (given, or the active turn) is fixed in this transaction, so a replay
 * cancels the same turn, never a later one. Pending inputs stay queued behind a pause.
 */
@Injectable()
export class CancelTurn {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly controls: SessionControls,
  ) {}

  async execute(principal: Principal, sessionId: string, event: CancelTurnEventDto, key: string): Promise<IdempotentResponse> {
    let ended = null as TurnEntity | null;
    const result = await this.acceptance.control(principal, sessionId, key, event, async (manager, session) => {
      const { turn, runId, events, nudges } = await this.controls.cancelTurn(manager, session, { turnId: event.yuxi?.turn_id, expectedRunId: event.yuxi?.expected_run_id });
      // A turn waiting at a waitpoint ends here, with no worker to count it.
      ended = turn.status === 'cancelled' ? turn : null;
      // In the outbox with the cancel itself, so it precedes the terminal event on every stream;
      // clients show "stopping" from here on (turn.yuxi.cancellation_pending).
      return {
        receipt: { ...acceptedReceipt(sessionId, null), turn_id: turn.id, run_id: runId },
        events: [turnEvents.turnState(turn), ...events],
        // The run's worker is told after commit, like any nudge: it stops at the next boundary.
        nudges: runId ? [...nudges, { kind: 'cancel', runId }] : nudges,
      };
    });
    if (!result.replayed && ended) metrics.turnFinished('cancelled', turnSeconds(ended));
    return result;
  }
}

/** Resumes a paused queue after a cancellation settled, claiming its original head. */
@Injectable()
export class ContinueQueue {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly controls: SessionControls,
  ) {}

  async execute(principal: Principal, sessionId: string, event: ContinueQueueEventDto, key: string): Promise<IdempotentResponse> {
    return this.acceptance.control(principal, sessionId, key, event, async (manager, session) => {
      await this.controls.continueQueue(manager, session);
      return { receipt: acceptedReceipt(sessionId, null), nudges: [{ kind: 'queue' }] };
    });
  }
}
