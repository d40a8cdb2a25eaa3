import { Injectable, Logger } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { AgentsService } from '#libs/agents';
import type { Principal } from '#libs/auth';
import { newId } from '#libs/database';
import { ApiError, flattenValidationErrors } from '#libs/errors';
import { EventOutbox, type OutboxBatch, type OutgoingEvent } from '#libs/events';
import { type AcceptedReceipt, IdempotencyService, type IdempotentResponse, InputsService, type InputMessage, type InputMode } from '#libs/inputs';
import { ModelRegistry } from '#libs/models';
import { RunSignals, SessionDispatcher } from '#libs/queue';
import { type SessionEntity, SessionsService } from '#libs/sessions';
import { toTurnDto, type TurnEntity, TurnsService } from '#libs/turns';
import { DataSource } from 'typeorm';
import { InjectDataSource } from '@nestjs/typeorm';
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
 * (receipt + session lock + input + the outbox events announcing it) committed before the
 * response. Publishing those events and nudging the worker happen after the commit and are not
 * waited for: with Redis down the request still answers at once, and the outbox relay delivers
 * both later.
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
    private readonly outbox: EventOutbox,
    private readonly turns: TurnsService,
    private readonly signals: RunSignals,
    @InjectDataSource() private readonly dataSource: DataSource,
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

    let batch: OutboxBatch | null = null;
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
        const events: OutgoingEvent[] = [];
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
        // The session stream starts with the session itself; a stream=true create replays from here.
        events.push({ type: 'agent.session.created', session: body });
        if (receipt) events.push({ type: 'yuxi.session.event.accepted', receipt });
        batch = await this.outbox.append(manager, session.id, events, { nudge: receipt !== null });
        return { status: 201, body, sessionId: session.id, receipt };
      },
    );
    if (!result.replayed && batch) this.afterCommit(batch, result.receipt !== null);
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
    let batch: OutboxBatch | null = null;
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
        const active = event.yuxi?.mode === 'follow_up' ? null : await this.turns.activeTurn(manager, sessionId);
        const mode = resolveMode(active, event.yuxi?.mode, hasOverride);
        if (mode === 'steer' && active) steerIntoRunningTurn = true;
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
        batch = await this.outbox.append(manager, sessionId, [{ type: 'yuxi.session.event.accepted', receipt }], { nudge: true });
        return { status: 202, body: receipt, sessionId, receipt };
      },
    );
    if (!result.replayed && batch) {
      this.afterCommit(batch, true);
      if (steerIntoRunningTurn) void this.announceSteer(sessionId);
    }
    return result;
  }

  /** Makes a pending follow-up a steer; repeating it on a pending steer is already satisfied. */
  private async promoteInput(principal: Principal, sessionId: string, event: PromoteInputEventDto, key: string): Promise<IdempotentResponse> {
    const result = await this.controlEvent(principal, sessionId, key, event, async (manager) => {
      const active = await this.turns.activeTurn(manager, sessionId);
      if (active?.status === 'requires_action') throw new ApiError('state_conflict', 'The turn is waiting for an answer or approval');
      if (active?.cancellationPending) throw new ApiError('state_conflict', 'The turn is being cancelled');
      await this.inputs.promote(manager, sessionId, event.input_id);
      return { receipt: acceptedReceipt(sessionId, event.input_id), nudge: true };
    });
    if (!result.replayed) void this.announceSteer(sessionId);
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
      return { receipt: acceptedReceipt(sessionId, event.input_id) };
    });
  }

  /**
   * Cancels a turn: the target (given, or the current turn) is fixed in this transaction, so a
   * replay cancels the same turn, never a later one. Pending inputs stay queued behind a pause.
   */
  private async cancelTurn(principal: Principal, sessionId: string, event: CancelTurnEventDto, key: string): Promise<IdempotentResponse> {
    const result = await this.controlEvent(principal, sessionId, key, event, async (manager, session) => {
      const turnId = event.yuxi?.turn_id ?? (await this.turns.activeTurn(manager, sessionId))?.id;
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

  /** Resumes a paused queue after a cancellation settled, claiming its original head. */
  private async continueQueue(principal: Principal, sessionId: string, event: ContinueQueueEventDto, key: string): Promise<IdempotentResponse> {
    return this.controlEvent(principal, sessionId, key, event, async (manager, session) => {
      if (!session.queuePaused) throw new ApiError('state_conflict', 'The queue is not paused');
      if (await this.turns.activeTurn(manager, sessionId)) throw new ApiError('state_conflict', 'A turn is still active; continue after it settles');
      await this.sessions.setQueuePaused(manager, sessionId, false);
      return { receipt: acceptedReceipt(sessionId, null), nudge: true };
    });
  }

  /** A control event: idempotent, under the session lock, announced with an accepted event (and any events of its own). */
  private async controlEvent(
    principal: Principal,
    sessionId: string,
    key: string,
    event: object & { type: string },
    apply: (manager: EntityManager, session: SessionEntity) => Promise<ControlOutcome>,
  ): Promise<IdempotentResponse> {
    let batch: OutboxBatch | null = null;
    let nudge = false;
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
        const outcome = await apply(manager, session);
        nudge = outcome.nudge ?? false;
        batch = await this.outbox.append(manager, sessionId, [{ type: 'yuxi.session.event.accepted', receipt: outcome.receipt }, ...(outcome.events ?? [])], {
          nudge,
        });
        return { status: 202, body: outcome.receipt, sessionId, receipt: outcome.receipt };
      },
    );
    if (!result.replayed && batch) this.afterCommit(batch, nudge);
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

  /** Archives when nothing is running or queued (the turns table decides); history stays readable. */
  async archiveSession(principal: Principal, sessionId: string): Promise<SessionDto> {
    const session = await this.dataSource.transaction(async (manager) => {
      const locked = await this.sessions.lock(manager, sessionId);
      if (!locked || locked.ownerId !== principal.userId) throw ApiError.notFound(`Session ${sessionId}`);
      if (await this.turns.activeTurn(manager, sessionId)) {
        throw new ApiError('state_conflict', 'The session has an active turn; cancel it or wait for it to finish before archiving');
      }
      if (locked.pendingInputCount > 0) {
        throw new ApiError('state_conflict', 'The session has pending inputs; cancel them or let them run before archiving', {
          queued_input_count: locked.pendingInputCount,
        });
      }
      await this.sessions.markArchived(manager, sessionId);
      return { ...locked, archived: true };
    });
    return toSessionDto(session);
  }

  /**
   * After commit, not awaited: publishes the committed events (the accepted event ahead of the
   * turn it starts) and then nudges the worker. Neither can lose anything: the outbox relay
   * publishes what is left and nudges for accepted inputs; the sweep re-nudges idle queues.
   */
  private afterCommit(batch: OutboxBatch, nudge: boolean): void {
    void (async () => {
      await this.outbox.flush(batch.sessionId, batch);
      if (nudge) await this.dispatcher.nudgeQuietly(batch.sessionId);
    })();
  }
}

/**
 * follow_up queues FIFO; steer goes ahead of all follow-ups. Omitted (auto): steer into an
 * executing turn, follow-up when idle; an override (model, approval) marks follow-up intent.
 * Auto is refused while the turn waits for an answer or approval or is being cancelled. `active`
 * is the session's active turn read from the turns table under the session lock.
 */
function resolveMode(active: TurnEntity | null, requested: InputMode | undefined, hasOverride: boolean): InputMode {
  if (requested === 'follow_up') return requested;
  if (requested === 'steer') {
    // A turn being cancelled takes no steer; queue a follow-up behind it instead.
    if (active?.cancellationPending) throw new ApiError('state_conflict', 'The turn is being cancelled; send yuxi.mode=follow_up to queue behind it');
    return requested;
  }
  if (!active || hasOverride) return 'follow_up';
  if (active.status === 'requires_action') {
    throw new ApiError('state_conflict', 'The turn is waiting for an answer or approval; resume it, or send yuxi.mode=follow_up to queue');
  }
  if (active.cancellationPending) throw new ApiError('state_conflict', 'The turn is being cancelled; send yuxi.mode=follow_up to queue behind it');
  return 'steer';
}

interface ControlOutcome {
  receipt: AcceptedReceipt;
  /** Events of the control itself, announced after its accepted event. */
  events?: OutgoingEvent[];
  /** The control may let the worker claim something (continue, promote). */
  nudge?: boolean;
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
