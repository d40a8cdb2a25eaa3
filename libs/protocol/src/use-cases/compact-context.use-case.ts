import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { frozenInputConfig, IdempotencyService, type IdempotentResponse, SessionControls, turnEvents } from '#libs/engine';
import type { CompactEventDto } from '../dto/submit-event.dto.js';
import { Acceptance, acceptedReceipt } from './acceptance.js';

/**
 * `yuxi.session.input.compact`: a manual compaction, queued like a follow-up (FIFO behind what is
 * queued; at once when the session is idle; a paused queue stays paused). It works whatever the
 * compaction mode: `off` and `manual` only stop automatic compaction. Its turn only compacts the context: its one output is
 * the `compaction` item. Idempotent like every submission.
 */
@Injectable()
export class CompactContext {
  constructor(
    private readonly acceptance: Acceptance,
    private readonly controls: SessionControls,
  ) {}

  async execute(principal: Principal, sessionId: string, event: CompactEventDto, key: string): Promise<IdempotentResponse> {
    const scope = IdempotencyService.eventScope(sessionId);
    const intent = { operation: event.type, session_id: sessionId, event: { type: event.type, instructions: event.instructions ?? null } };
    return this.acceptance.accept(principal, scope, key, intent, async (manager) => {
      const { input } = await this.controls.acceptMessage(manager, principal.userId, sessionId, {
        requestedMode: 'follow_up',
        hasOverride: false,
        messages: [],
        attachmentFileIds: [],
        resumesPausedQueue: false,
        queuesBehindBlockedTurn: true,
        config: (session) => ({ ...frozenInputConfig(session), compact: event.instructions ? { instructions: event.instructions } : {} }),
      });
      const receipt = acceptedReceipt(sessionId, input.id);
      return { status: 202, body: receipt, sessionId, receipt, events: [turnEvents.accepted(receipt)], nudges: [{ kind: 'queue' }] };
    });
  }
}
