import { Injectable, Logger } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { IdempotencyService, type IdempotentResponse, type InputMessage, type InputMode, InputsService } from '#libs/inputs';
import { ModelRegistry } from '#libs/models';
import { RunSignals } from '#libs/queue';
import { SessionsService } from '#libs/sessions';
import { type TurnEntity, TurnsService } from '#libs/turns';
import type { MessageEventDto } from '../dto/submit-event.dto.js';
import { parseAgentInput } from '../input-parser.js';
import { Acceptance, acceptedReceipt } from './acceptance.js';

/**
 * Queues a user message: a follow-up (FIFO) or a steer into the running turn. Visibility is checked
 * where the input is accepted (the session UPDATE is scoped to the owner and answers 404), so the
 * hot path pays no separate lookup.
 */
@Injectable()
export class SubmitMessage {
  private readonly logger = new Logger(SubmitMessage.name);

  constructor(
    private readonly acceptance: Acceptance,
    private readonly sessions: SessionsService,
    private readonly inputs: InputsService,
    private readonly turns: TurnsService,
    private readonly models: ModelRegistry,
    private readonly signals: RunSignals,
  ) {}

  async execute(principal: Principal, sessionId: string, event: MessageEventDto, key: string): Promise<IdempotentResponse> {
    const hasOverride = event.yuxi?.model !== undefined || event.yuxi?.tool_approval_mode !== undefined;
    if (event.yuxi?.mode === 'steer' && hasOverride) {
      throw DomainError.validation(
        ['model', 'tool_approval_mode']
          .filter((field) => event.yuxi?.[field as 'model' | 'tool_approval_mode'] !== undefined)
          .map((field) => ({ field: `events[0].yuxi.${field}`, errors: ['per-message overrides are accepted on follow-ups only, not on steer'] })),
      );
    }
    if (event.yuxi?.attachment_file_ids?.length) throw new DomainError('not_implemented', 'File attachments are not available yet');
    const modelOverride = event.yuxi?.model === undefined ? undefined : this.models.validate(event.yuxi.model);
    const messages: InputMessage[] = parseAgentInput(event.input).messages;

    let steerIntoRunningTurn = false;
    const scope = IdempotencyService.eventScope(sessionId);
    const intent = { operation: event.type, session_id: sessionId, event: { ...event, input: messages } };
    const result = await this.acceptance.accept(principal, scope, key, intent, async (manager) => {
      const receivedAt = new Date();
      const { session, receivedSeq } = await this.sessions.acceptInput(manager, sessionId, principal.userId, receivedAt);
      if (session.archived) throw new DomainError('state_conflict', 'The session is archived');
      const active = event.yuxi?.mode === 'follow_up' ? null : await this.turns.activeTurn(manager, sessionId);
      const mode = resolveMode(active, event.yuxi?.mode, hasOverride);
      steerIntoRunningTurn = mode === 'steer' && active !== null;
      // A message to a paused queue resumes it and runs alone first; the old queue follows.
      if (session.queuePaused) await this.sessions.setQueuePaused(manager, sessionId, false);
      const input = await this.inputs.insert(manager, {
        sessionId,
        receivedSeq,
        mode,
        priority: session.queuePaused ? 1 : 0,
        messages,
        attachmentFileIds: [],
        config: {
          agent_id: session.agentId,
          model: modelOverride ?? session.model,
          tool_approval_mode: event.yuxi?.tool_approval_mode ?? session.toolApprovalMode,
          instructions: session.instructions,
        },
        receivedAt,
      });
      const receipt = acceptedReceipt(sessionId, input.id);
      return { status: 202, body: receipt, sessionId, receipt, events: [{ type: 'yuxi.session.event.accepted', receipt }], nudge: true };
    });
    if (!result.replayed && steerIntoRunningTurn) {
      void this.signals.announceSteer(sessionId).catch((error: unknown) => this.logger.warn(`steer signal not sent: ${String(error)}`));
    }
    return result;
  }
}

/**
 * follow_up queues FIFO; steer goes ahead of all follow-ups. Omitted (auto): steer into an
 * executing turn, follow-up when idle; an override (model, approval) marks follow-up intent.
 * Auto is refused while the turn waits for an answer or approval or is being cancelled. `active`
 * is the session's active turn read from the turns table under the session lock.
 */
export function resolveMode(active: TurnEntity | null, requested: InputMode | undefined, hasOverride: boolean): InputMode {
  if (requested === 'follow_up') return requested;
  if (requested === 'steer') {
    // A turn being cancelled takes no steer; queue a follow-up behind it instead.
    if (active?.cancellationPending) throw new DomainError('state_conflict', 'The turn is being cancelled; send yuxi.mode=follow_up to queue behind it');
    return requested;
  }
  if (!active || hasOverride) return 'follow_up';
  if (active.status === 'requires_action') {
    throw new DomainError('state_conflict', 'The turn is waiting for an answer or approval; resume it, or send yuxi.mode=follow_up to queue');
  }
  if (active.cancellationPending) throw new DomainError('state_conflict', 'The turn is being cancelled; send yuxi.mode=follow_up to queue behind it');
  return 'steer';
}
