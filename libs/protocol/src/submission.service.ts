import { Injectable, Logger } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { AgentsService } from '#libs/agents';
import type { Principal } from '#libs/auth';
import { newId } from '#libs/database';
import { ApiError, flattenValidationErrors } from '#libs/errors';
import { EventPublisher } from '#libs/events';
import { type AcceptedReceipt, IdempotencyService, type IdempotentResponse, InputsService, type InputMessage, type InputMode } from '#libs/inputs';
import { ModelRegistry } from '#libs/models';
import { RunSignals, SessionDispatcher } from '#libs/queue';
import { ACTIVE_TURN_STATUSES, type SessionEntity, SessionsService } from '#libs/sessions';
import { toTurnDto, type TurnEntity, TurnsService } from '#libs/turns';
import type { EntityManager } from 'typeorm';
import type { CreateSessionDto } from './dto/create-session.dto.js';
import type { SessionDto } from './dto/session.dto.js';
import { MessageEventDto, PROTOCOL_EVENT_TYPES } from './dto/submit-event.dto.js';
import { CancelInputEventDto, CancelTurnEventDto, ContinueQueueEventDto, PromoteInputEventDto, type UpdateSessionDto } from './dto/update-session.dto.js';
import { parseAgentInput } from './input-parser.js';
import { toSessionDto } from './session-view.js';

const DEFAULT_TITLE = '新的对话';

/**
 * Accepts work: session creation and event submission. Each acceptance is one transaction
 * (receipt + session lock + input) committed before the response; the worker is nudged and the
 * `accepted` event published only after that commit.
 */
@Injectable()
export class SubmissionService {
  private readonly logger = new Logger(SubmissionService.name);

  constructor(
    private readonly idempotency: IdempotencyService,
    private readonly sessions: SessionsService,
    private readonly inputs: InputsService,
    private readonly agents: AgentsService,
    private readonly models: ModelRegistry,
    private readonly dispatcher: SessionDispatcher,
    private readonly publisher: EventPublisher,
    private readonly turns: TurnsService,
    private readonly signals: RunSignals,
  ) {}

  async createSession(principal: Principal, dto: CreateSessionDto, rawKey: string | undefined): Promise<IdempotentResponse> {
    const key = IdempotencyService.requireKey(rawKey);
    const messages = dto.input === undefined ? null : parseAgentInput(dto.input).messages;
    if (!messages && (dto.stream === true || dto.yuxi?.attachment_file_ids !== undefined)) {
      throw ApiError.validation([{ field: 'input', errors: ['stream=true and attachment_file_ids require a non-empty input'] }]);
    }
    if (dto.yuxi?.attachment_file_ids?.length) throw new ApiError('not_implemented', 'File attachments are not available yet');
    const agent = await this.agents.getVisible(principal.userId, dto.agent_id);
    const model = this.models.validate(dto.agent?.model ?? this.agents.effectiveModel(agent));
    const toolApprovalMode = dto.tool_approval_mode ?? agent.toolApprovalMode;

    const result = await this.idempotency.execute(
      {
        ownerId: principal.userId,
        scope: 'sessions.create',
        key,
        requestHash: IdempotencyService.hashIntent({ operation: 'sessions.create', body: { ...dto, input: messages } }),
      },
      async (manager) => {
        const session = await this.sessions.create(
          manager,
          {
            ownerId: principal.userId,
            agentId: agent.id,
            model,
            toolApprovalMode,
            instructions: agent.instructions,
            title: dto.title ?? DEFAULT_TITLE,
            projectId: dto.project_id ?? null,
          },
          messages !== null,
        );
        let receipt: AcceptedReceipt | null = null;
        if (messages) {
          const input = await this.inputs.insert(manager, {
            sessionId: session.id,
            receivedSeq: 1,
            mode: 'follow_up',
            messages,
            attachmentFileIds: [],
            config: { agent_id: agent.id, model, tool_approval_mode: toolApprovalMode, instructions: agent.instructions },
            receivedAt: session.createdAt,
          });
          receipt = acceptedReceipt(session.id, input.id);
        }
        const body = toSessionDto(session, receipt);
        return { status: 201, body, sessionId: session.id, receipt };
      },
    );
    if (!result.replayed && result.sessionId) {
      // The session stream starts with the session itself; a stream=true create replays from here.
      await this.publisher
        .publish(result.sessionId, [{ type: 'agent.session.created', session: JSON.parse(result.body) as unknown }])
        .catch((error: unknown) => this.logger.warn(`created event for ${result.sessionId} not published: ${String(error)}`));
      if (result.receipt) await this.afterAccept(result.sessionId, result.receipt);
    }
    return result;
  }

  async submitEvent(principal: Principal, sessionId: string, events: Record<string, unknown>[], rawKey: string | undefined): Promise<IdempotentResponse> {
    const key = IdempotencyService.requireKey(rawKey);
    // Visibility is checked where the input is accepted (the session UPDATE is scoped to the
    // owner and answers 404), so the hot path pays no separate lookup.
    const raw = events[0] ?? {};
    const type = raw.type;
    if (type === 'agent.session.input.message') return this.submitMessage(principal, sessionId, await validateEvent(MessageEventDto, raw), key);
    if (type === 'yuxi.session.input.cancel_input') return this.cancelInput(principal, sessionId, await validateEvent(CancelInputEventDto, raw), key);
    if (type === 'agent.session.input.cancel') return this.cancelTurn(principal, sessionId, await validateEvent(CancelTurnEventDto, raw), key);
    if (type === 'yuxi.session.input.promote') return this.promoteInput(principal, sessionId, await validateEvent(PromoteInputEventDto, raw), key);
    if (type === 'yuxi.session.input.continue') return this.continueQueue(principal, sessionId, await validateEvent(ContinueQueueEventDto, raw), key);
    if (typeof type === 'string' && (PROTOCOL_EVENT_TYPES as readonly string[]).includes(type)) {
      throw new ApiError('not_implemented', `Event type ${type} is not available yet`);
    }
    throw new ApiError('unknown_event_type', `Unknown event type ${JSON.stringify(type)}`, { allowed: PROTOCOL_EVENT_TYPES });
  }

  private async submitMessage(principal: Principal, sessionId: string, event: MessageEventDto, key: string): Promise<IdempotentResponse> {
    const hasOverride = event.yuxi?.model !== undefined || event.yuxi?.tool_approval_mode !== undefined;
    if (event.yuxi?.mode === 'steer' && hasOverride) {
      throw ApiError.validation(
        ['model', 'tool_approval_mode']
          .filter((field) => event.yuxi?.[field as 'model' | 'tool_approval_mode'] !== undefined)
          .map((field) => ({ field: `events[0].yuxi.${field}`, errors: ['per-message overrides are accepted on follow-ups only, not on steer'] })),
      );
    }
    if (event.yuxi?.attachment_file_ids?.length) throw new ApiError('not_implemented', 'File attachments are not available yet');
    const modelOverride = event.yuxi?.model === undefined ? undefined : this.models.validate(event.yuxi.model);
    const messages: InputMessage[] = parseAgentInput(event.input).messages;

    let steerIntoRunningTurn = false;
    const result = await this.idempotency.execute(
      {
        ownerId: principal.userId,
        scope: IdempotencyService.eventScope(sessionId),
        key,
        requestHash: IdempotencyService.hashIntent({ operation: event.type, session_id: sessionId, event: { ...event, input: messages } }),
      },
      async (manager) => {
        const receivedAt = new Date();
        const { session, receivedSeq } = await this.sessions.acceptInput(manager, sessionId, principal.userId, receivedAt);
        if (session.archived) throw new ApiError('state_conflict', 'The session is archived');
        const mode = await this.resolveMode(manager, session, event.yuxi?.mode, hasOverride);
        if (mode === 'steer' && session.currentTurn && ACTIVE_TURN_STATUSES.has(session.currentTurn.status)) steerIntoRunningTurn = true;
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
        return { status: 202, body: receipt, sessionId, receipt };
      },
    );
    if (!result.replayed && result.receipt) {
      await this.afterAccept(sessionId, result.receipt);
      if (steerIntoRunningTurn) await this.announceSteer(sessionId);
    }
    return result;
  }

  /**
   * follow_up queues FIFO; steer goes ahead of all follow-ups. Omitted (auto): steer into an
   * executing turn, follow-up when idle; an override (model, approval) marks follow-up intent.
   * Auto is refused while the turn waits for an answer or approval or is being cancelled.
   */
  private async resolveMode(manager: EntityManager, session: SessionEntity, requested: InputMode | undefined, hasOverride: boolean): Promise<InputMode> {
    if (requested === 'follow_up') return requested;
    const current = session.currentTurn;
    if (requested === 'steer') {
      // A turn being cancelled takes no steer; queue a follow-up behind it instead.
      const turn = current && ACTIVE_TURN_STATUSES.has(current.status) ? await this.turns.findTurn(manager, current.id) : null;
      if (turn?.cancellationPending) throw new ApiError('state_conflict', 'The turn is being cancelled; send yuxi.mode=follow_up to queue behind it');
      return requested;
    }
    if (!current || !ACTIVE_TURN_STATUSES.has(current.status) || hasOverride) return 'follow_up';
    if (current.status === 'requires_action') {
      throw new ApiError('state_conflict', 'The turn is waiting for an answer or approval; resume it, or send yuxi.mode=follow_up to queue');
    }
    const turn = await this.turns.findTurn(manager, current.id);
    if (turn?.cancellationPending) {
      throw new ApiError('state_conflict', 'The turn is being cancelled; send yuxi.mode=follow_up to queue behind it');
    }
    return 'steer';
  }

  /** Makes a pending follow-up a steer; repeating it on a pending steer is already satisfied. */
  private async promoteInput(principal: Principal, sessionId: string, event: PromoteInputEventDto, key: string): Promise<IdempotentResponse> {
    const result = await this.controlEvent(principal, sessionId, key, event, async (manager, session) => {
      if (session.currentTurn && ACTIVE_TURN_STATUSES.has(session.currentTurn.status)) {
        if (session.currentTurn.status === 'requires_action') throw new ApiError('state_conflict', 'The turn is waiting for an answer or approval');
        const turn = await this.turns.findTurn(manager, session.currentTurn.id);
        if (turn?.cancellationPending) throw new ApiError('state_conflict', 'The turn is being cancelled');
      }
      await this.inputs.promote(manager, sessionId, event.input_id);
      return acceptedReceipt(sessionId, event.input_id);
    });
    if (!result.replayed) {
      await this.announceSteer(sessionId);
      await this.dispatcher.nudgeQuietly(sessionId);
    }
    return result;
  }

  private async announceSteer(sessionId: string): Promise<void> {
    await this.signals.announceSteer(sessionId).catch((error: unknown) => this.logger.warn(`steer signal not sent: ${String(error)}`));
  }

  /** Removes one pending input from the queue; it never becomes a turn. The receipt points at that input. */
  private async cancelInput(principal: Principal, sessionId: string, event: CancelInputEventDto, key: string): Promise<IdempotentResponse> {
    return this.controlEvent(principal, sessionId, key, event, async (manager) => {
      const at = new Date();
      await this.inputs.cancelPending(manager, sessionId, event.input_id, at);
      await this.sessions.recordInputCancelled(manager, sessionId, at);
      return acceptedReceipt(sessionId, event.input_id);
    });
  }

  /**
   * Cancels a turn: the target (given, or the current turn) is fixed in this transaction, so a
   * replay cancels the same turn, never a later one. Pending inputs stay queued behind a pause.
   */
  private async cancelTurn(principal: Principal, sessionId: string, event: CancelTurnEventDto, key: string): Promise<IdempotentResponse> {
    let cancelling: TurnEntity | null = null;
    const result = await this.controlEvent(principal, sessionId, key, event, async (manager, session) => {
      const current = session.currentTurn && ACTIVE_TURN_STATUSES.has(session.currentTurn.status) ? session.currentTurn.id : null;
      const turnId = event.yuxi?.turn_id ?? current;
      if (!turnId) throw new ApiError('state_conflict', 'The session has no active turn to cancel');
      const turn = await this.turns.requestCancel(manager, sessionId, turnId);
      if (!turn) {
        const ended = await this.turns.findTurn(manager, turnId);
        if (!ended || ended.sessionId !== sessionId) throw ApiError.notFound(`Turn ${turnId}`);
        throw new ApiError('state_conflict', `Turn ${turnId} has already ended`);
      }
      if (event.yuxi?.expected_run_id !== undefined && event.yuxi.expected_run_id !== turn.currentRunId) {
        throw new ApiError('state_conflict', 'expected_run_id is not the current run of the turn', { current_run_id: turn.currentRunId });
      }
      if (session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, sessionId, true);
      cancelling = turn;
      return { ...acceptedReceipt(sessionId, null), turn_id: turn.id, run_id: turn.currentRunId };
    });
    if (!result.replayed && cancelling) {
      // Published before the worker is told, so it precedes the terminal event; clients show
      // "stopping" from here on (turn.yuxi.cancellation_pending).
      const turn: TurnEntity = cancelling;
      await this.publisher
        .publish(sessionId, [{ type: 'yuxi.session.turn.state', turn_id: turn.id, turn: toTurnDetailState(turn) }])
        .catch((error: unknown) => this.logger.warn(`turn state for ${sessionId} not published: ${String(error)}`));
    }
    if (!result.replayed && result.receipt?.run_id) {
      await this.signals.requestCancel(result.receipt.run_id).catch((error: unknown) => this.logger.warn(`cancel signal not sent: ${String(error)}`));
    }
    return result;
  }

  /** Resumes a paused queue after a cancellation settled, claiming its original head. */
  private async continueQueue(principal: Principal, sessionId: string, event: ContinueQueueEventDto, key: string): Promise<IdempotentResponse> {
    const result = await this.controlEvent(principal, sessionId, key, event, async (manager, session) => {
      if (!session.queuePaused) throw new ApiError('state_conflict', 'The queue is not paused');
      if (session.currentTurn && ACTIVE_TURN_STATUSES.has(session.currentTurn.status)) {
        throw new ApiError('state_conflict', 'A turn is still active; continue after it settles');
      }
      await this.sessions.setQueuePaused(manager, sessionId, false);
      return acceptedReceipt(sessionId, null);
    });
    if (!result.replayed) await this.dispatcher.nudgeQuietly(sessionId);
    return result;
  }

  /** A control event: idempotent, under the session lock, announced with an accepted event. */
  private async controlEvent(
    principal: Principal,
    sessionId: string,
    key: string,
    event: object & { type: string },
    apply: (manager: EntityManager, session: SessionEntity) => Promise<AcceptedReceipt>,
  ): Promise<IdempotentResponse> {
    const result = await this.idempotency.execute(
      {
        ownerId: principal.userId,
        scope: IdempotencyService.eventScope(sessionId),
        key,
        requestHash: IdempotencyService.hashIntent({ operation: event.type, session_id: sessionId, event }),
      },
      async (manager) => {
        const session = await this.sessions.lock(manager, sessionId);
        if (!session || session.ownerId !== principal.userId) throw ApiError.notFound(`Session ${sessionId}`);
        const receipt = await apply(manager, session);
        return { status: 202, body: receipt, sessionId, receipt };
      },
    );
    if (!result.replayed && result.receipt) {
      await this.publisher
        .publish(sessionId, [{ type: 'yuxi.session.event.accepted', receipt: result.receipt }])
        .catch((error: unknown) => this.logger.warn(`accepted event for ${sessionId} not published: ${String(error)}`));
    }
    return result;
  }

  async updateSession(principal: Principal, sessionId: string, dto: UpdateSessionDto): Promise<SessionDto> {
    const model = dto.agent?.model === undefined ? undefined : this.models.validate(dto.agent.model);
    const session = await this.sessions.update(principal.userId, sessionId, {
      title: dto.yuxi?.title,
      isPinned: dto.yuxi?.is_pinned,
      unread: dto.yuxi?.unread,
      toolApprovalMode: dto.yuxi?.tool_approval_mode,
      model,
    });
    return toSessionDto(session);
  }

  async archiveSession(principal: Principal, sessionId: string): Promise<SessionDto> {
    return toSessionDto(await this.sessions.archive(principal.userId, sessionId));
  }

  private async afterAccept(sessionId: string, receipt: AcceptedReceipt): Promise<void> {
    // Published before the nudge so subscribers see the acceptance ahead of the turn it starts.
    await this.publisher
      .publish(sessionId, [{ type: 'yuxi.session.event.accepted', receipt }])
      .catch((error: unknown) => this.logger.warn(`accepted event for ${sessionId} not published: ${String(error)}`));
    await this.dispatcher.nudgeQuietly(sessionId);
  }
}

function acceptedReceipt(sessionId: string, inputId: string | null): AcceptedReceipt {
  return {
    object: 'yuxi.session.event.accepted',
    event_id: `evt_${newId().replaceAll('-', '')}`,
    session_id: sessionId,
    input_id: inputId,
    turn_id: null,
    run_id: null,
    status: 'accepted',
  };
}

async function validateEvent<T extends object>(cls: new () => T, raw: Record<string, unknown>): Promise<T> {
  const instance = plainToInstance(cls, raw);
  const errors = await validate(instance, { whitelist: true, forbidNonWhitelisted: true, validationError: { target: false, value: false } });
  if (errors.length > 0) throw ApiError.validation(flattenValidationErrors(errors, 'events[0]'));
  return instance;
}

/** The turn projection plus the cancellation flag, as `yuxi.session.turn.state` carries it. */
function toTurnDetailState(turn: TurnEntity) {
  const dto = toTurnDto(turn);
  return { ...dto, yuxi: { ...dto.yuxi, cancellation_pending: turn.cancellationPending } };
}
