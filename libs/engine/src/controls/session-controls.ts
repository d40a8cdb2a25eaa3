import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '#libs/errors';
import { type FileEntity, FilesRepository } from '#libs/files';
import { ItemsRepository } from '../tables/items.repository.js';
import { type FrozenInputConfig, type InputEntity, type InputMessage } from '../tables/input.entity.js';
import { type InputMode } from '../machines/input-states.js';
import { InputsRepository, type RidingWrite } from '../tables/inputs.repository.js';
import { ProjectsRepository } from '../tables/projects.repository.js';
import { type SessionEntity, type TurnSummary } from '../tables/session.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import type { OutgoingEvent } from '#libs/events';
import { TERMINAL_TURN_STATUSES } from '../machines/turn-states.js';
import { toCurrentTurn } from '../views/projections.js';
import { type TurnEntity } from '../tables/turn.entities.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Nudge } from '../transaction/after-commit.js';
import { CooperationWaits } from '../cooperation/cooperation-waits.js';
import { gateCancelInput, gatePromoteInput, refuseWhileBlocked } from '../acceptance/input-gates.js';
import { turnEvents } from '../steps/turn-events.js';

export interface MessageSpec {
  requestedMode: InputMode | undefined;
  /** A per-message model or approval override: follow-up intent. */
  hasOverride: boolean;
  messages: InputMessage[];
  /** Drafts of the submitter attached to the input (bound in the same transaction). */
  attachmentFileIds: string[];
  config: (session: SessionEntity) => FrozenInputConfig;
  /** false: a paused queue stays paused (a compaction request); default true. */
  resumesPausedQueue?: boolean;
  /**
   * true for a compaction request: no ordinary message, it queues FIFO even behind a turn that
   * waits for the caller or is being cancelled; default false (such a turn refuses messages).
   */
  queuesBehindBlockedTurn?: boolean;
  /**
   * true: the input's insert is handed back (`riding`) for the caller to run with its receipt, one
   * round trip fewer; ignored when files are attached (binding them needs the row first). The
   * caller must then pass it on (`WorkResult.riding`), or no input is stored.
   */
  insertWithReceipt?: boolean;
}

/**
 * The session's state changes that clients cause: a message joins the queue (and may resume a
 * paused one), a turn is asked to cancel (pausing what waits behind it), the queue continues, an
 * input is promoted or removed, the session is archived. Each runs inside the caller's accepting
 * transaction, after the session lock, and gates on the turns table. With TurnClaims, RunEndings
 * and RunRecovery (the worker's side: claim, yield, settle, release; the recovery sweep's
 * interrupt; the operator's seize and fail) this lib owns every transition of a session; no other
 * code changes a session's queue or turn state.
 */
@Injectable()
export class SessionControls {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly projects: ProjectsRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly files: FilesRepository,
    private readonly cooperation: CooperationWaits,
    private readonly items: ItemsRepository,
  ) {}

  /**
   * Queues a user message: follow-up (FIFO), or steer into the running turn. Takes the session lock
   * with the owner-scoped acceptance (404 for another owner's session).
   */
  async acceptMessage(
    manager: EntityManager,
    ownerId: string,
    sessionId: string,
    spec: MessageSpec,
  ): Promise<{ input: InputEntity; steersRunningTurn: boolean; riding: RidingWrite | null }> {
    const receivedAt = new Date();
    const { session, receivedSeq } = await this.sessions.acceptInput(manager, sessionId, ownerId, receivedAt);
    // A deleted project's sessions take no new work; what they had already accepted still runs.
    const workdirDeleted = !session.archived && session.projectId !== null && (await this.projects.isDeletedProject(manager, session.projectId));
    // The locked row's overview says whether a turn may be active: a follow-up to a settled
    // session (the common case) then needs no read of the turns table.
    const noTurnToGate = spec.queuesBehindBlockedTurn === true || !mayHaveActiveTurn(session.currentTurn);
    const active = session.archived || workdirDeleted || (spec.requestedMode === 'follow_up' && noTurnToGate) ? null : await this.turns.activeTurn(manager, sessionId);
    const { mode, resumes, config, steersRunningTurn } = planMessage(session, workdirDeleted, active, spec);
    if (resumes) await this.sessions.setQueuePaused(manager, sessionId, false);
    const newInput = {
      sessionId,
      receivedSeq,
      mode,
      priority: resumes ? 1 : 0,
      messages: spec.messages,
      attachmentFileIds: spec.attachmentFileIds,
      config,
      receivedAt,
    };
    if (spec.insertWithReceipt === true && spec.attachmentFileIds.length === 0) {
      const { row, write } = this.inputs.insertion(manager, newInput);
      return { input: row, steersRunningTurn, riding: write };
    }
    const input = await this.inputs.insert(manager, newInput);
    // An unknown or already attached file refuses the whole submission: nothing of it is stored.
    await this.files.bindDrafts(manager, ownerId, spec.attachmentFileIds, sessionId, input.id);
    return { input, steersRunningTurn, riding: null };
  }

  /**
   * Asks a turn to cancel: the target (given, or the active turn) is fixed here, so a replay cancels
   * the same turn, never a later one. Pending inputs stay queued behind a pause. Returns the turn,
   * marked `cancellation_pending`; the worker (or recovery) settles it.
   */
  async cancelTurn(
    manager: EntityManager,
    session: SessionEntity,
    target: { turnId?: string; expectedRunId?: string },
  ): Promise<{ turn: TurnEntity; runId: string | null; events: OutgoingEvent[]; nudges: Nudge[] }> {
    const turnId = target.turnId ?? (await this.turns.activeTurn(manager, session.id))?.id;
    if (!turnId) throw new DomainError('state_conflict', 'The session has no active turn to cancel');
    const waiting = await this.turns.findTurn(manager, turnId);
    // A turn waiting at a waitpoint (a coordinator's wait for its members included) has no worker to stop: it ends cancelled here and now.
    if (waiting?.sessionId === session.id && waiting.waitpoint !== null && (waiting.status === 'requires_action' || waiting.status === 'in_progress')) {
      if (target.expectedRunId !== undefined && target.expectedRunId !== waiting.currentRunId) {
        throw new DomainError('state_conflict', 'expected_run_id is not the current run of the turn', { current_run_id: waiting.currentRunId });
      }
      const cancelled = await this.turns.cancelWaitingTurn(manager, waiting, new Date());
      if (cancelled) {
        await this.sessions.recordTurnUpdated(manager, session.id, toCurrentTurn(cancelled.turn), 0, new Date());
        if (session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, session.id, true);
        const events: OutgoingEvent[] = cancelled.run ? [turnEvents.run('cancelled', cancelled.run)] : [];
        // A command waiting for its approval never ran: its item ends with the turn.
        if (session.environment) {
          for (const item of await this.items.endRunningCommands(manager, waiting.id, 'The turn was cancelled before this command ran.')) {
            events.unshift(turnEvents.item('done', item, item.content[0]?.command_execution?.output_index ?? 0));
          }
        }
        // A member's turn ended: its parent hears of it.
        const nudges = await this.cooperation.memberTurnEnded(manager, session, cancelled.turn);
        return { turn: cancelled.turn, runId: waiting.currentRunId, events: [...events, turnEvents.turn('cancelled', cancelled.turn)], nudges };
      }
    }
    const turn = await this.turns.requestCancel(manager, session.id, turnId);
    if (!turn) {
      const ended = await this.turns.findTurn(manager, turnId);
      if (!ended || ended.sessionId !== session.id) throw DomainError.notFound(`Turn ${turnId}`);
      throw new DomainError('state_conflict', `Turn ${turnId} has already ended`);
    }
    if (target.expectedRunId !== undefined && target.expectedRunId !== turn.currentRunId) {
      throw new DomainError('state_conflict', 'expected_run_id is not the current run of the turn', { current_run_id: turn.currentRunId });
    }
    if (session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, session.id, true);
    return { turn, runId: turn.currentRunId, events: [], nudges: [] };
  }

  /** Resumes a paused queue once its cancelled turn settled; the worker then claims its original head. */
  async continueQueue(manager: EntityManager, session: SessionEntity): Promise<void> {
    if (!session.queuePaused) throw new DomainError('state_conflict', 'The queue is not paused');
    if (await this.turns.activeTurn(manager, session.id)) throw new DomainError('state_conflict', 'A turn is still active; continue after it settles');
    await this.sessions.setQueuePaused(manager, session.id, false);
  }

  /** Makes a pending follow-up a steer (not while the turn waits for an answer or is being cancelled). */
  async promote(manager: EntityManager, session: SessionEntity, inputId: string): Promise<void> {
    const active = await this.turns.activeTurn(manager, session.id);
    const input = gatePromoteInput(await this.inputs.findInSession(manager, session.id, inputId), inputId, active);
    if (input) await this.inputs.markSteer(manager, input.id);
  }

  /**
   * Removes one pending input from the queue; it never becomes a turn. A member left with nothing
   * to do by it has settled: its coordinator hears of it (the nudges to send after commit).
   */
  async cancelInput(manager: EntityManager, session: SessionEntity, inputId: string): Promise<Nudge[]> {
    const at = new Date();
    const input = gateCancelInput(await this.inputs.findInSession(manager, session.id, inputId), inputId);
    await this.inputs.markCancelled(manager, input.id, at);
    await this.sessions.recordInputCancelled(manager, session.id, at);
    if (session.depth === 0 || session.pendingInputCount > 1 || (await this.turns.activeTurn(manager, session.id))) return [];
    return this.cooperation.memberSettled(manager, session);
  }

  /**
   * Deletes an attachment of the session: refused while its preparation is unfinished, while
   * the input it belongs to is pending (it would run without it), or while a turn is active (its
   * tools may be reading it). One exception to the first rule: the unfinished preparation of a
   * cancelled input may be given up by deleting its file — no run will ever need it, and a
   * preparation that cannot finish (its upload lost) would otherwise hold the file, and the
   * owner's quota, forever. The file becomes a tombstone here; the caller removes its bytes.
   * Call under the session lock.
   */
  async deleteAttachment(manager: EntityManager, session: SessionEntity, fileId: string): Promise<FileEntity> {
    const file = await this.files.inSession(manager, session.id, fileId);
    if (!file) throw DomainError.notFound(`Attachment ${fileId}`);
    const busy = (why: string) => new DomainError('attachment_busy', `Attachment ${fileId} cannot be deleted now: ${why}`, { file_id: fileId });
    // The input row first, as a preparation does (input, then its files): a delete racing the
    // preparer then waits for it instead of deadlocking with it.
    const input = file.inputId ? await this.inputs.lockById(manager, file.inputId) : null;
    if (file.status !== 'ready' && input?.status !== 'cancelled') throw busy('its preparation into the session workdir is unfinished');
    if (input?.status === 'pending') throw busy(`the input ${input.id} it is attached to is still pending`);
    if (await this.turns.activeTurn(manager, session.id)) throw busy('a turn of the session is active');
    if (!(await this.files.tombstoneAttachment(manager, session.id, fileId))) throw DomainError.notFound(`Attachment ${fileId}`);
    // The last unprepared file of a cancelled input is gone: nothing is left to prepare.
    if (file.status === 'bound' && input && (await this.files.allReady(manager, input.id))) await this.inputs.markAttachmentsReady(manager, input.id);
    return file;
  }

  /** Archives when nothing is running or queued; history stays readable. */
  async archive(manager: EntityManager, session: SessionEntity): Promise<SessionEntity> {
    if (await this.turns.activeTurn(manager, session.id)) {
      throw new DomainError('state_conflict', 'The session has an active turn; cancel it or wait for it to finish before archiving');
    }
    if (session.pendingInputCount > 0) {
      throw new DomainError('state_conflict', 'The session has pending inputs; cancel them or let them run before archiving', {
        queued_input_count: session.pendingInputCount,
      });
    }
    const revision = await this.sessions.markArchived(manager, session.id);
    return { ...session, archived: true, revision };
  }
}

/** What a message becomes on the session as read (or locked): its mode, whether it resumes a paused queue, its frozen config. */
export interface MessagePlan {
  mode: InputMode;
  /** The queue was paused: the message resumes it and runs first (priority 1). */
  resumes: boolean;
  config: FrozenInputConfig;
  /** A steer into the active turn: its worker is told after commit. */
  steersRunningTurn: boolean;
}

/**
 * Decides a message on a session row and its active turn (null: none), refusing what the session
 * takes no message in: archived, its project deleted (what it had already accepted still runs),
 * a blocked turn (`resolveMode`), an override its agent's policy forbids (`spec.config`).
 */
export function planMessage(session: SessionEntity, workdirDeleted: boolean, active: TurnEntity | null, spec: MessageSpec): MessagePlan {
  if (session.archived) throw new DomainError('state_conflict', 'The session is archived');
  if (session.projectId !== null && workdirDeleted) throw new DomainError('state_conflict', `The session's project ${session.projectId} is deleted`);
  const mode = resolveMode(active, spec.requestedMode, spec.hasOverride);
  // A message to a paused queue resumes it and runs alone first; the old queue follows. A
  // compaction request does not: it waits in the paused queue like the inputs before it.
  const resumes = session.queuePaused && spec.resumesPausedQueue !== false;
  return { mode, resumes, config: spec.config(session), steersRunningTurn: mode === 'steer' && active !== null };
}

/**
 * follow_up queues FIFO; steer goes ahead of all follow-ups. Omitted (auto): steer into an
 * executing turn, follow-up when idle; an override (model, approval) marks follow-up intent.
 * Every ordinary message, whatever its mode, is refused while the turn waits for a person (an
 * answer or an approval) or is being cancelled: the caller resumes the turn, or sends after it settles. A turn waiting
 * for a program queues follow-ups FIFO: the client's tool result (an explicit follow_up; auto and
 * steer are refused, as nothing executes to steer into) or its members (auto is a follow-up).
 * `active` is the session's active turn read from the turns table under the session lock.
 */
export function resolveMode(active: TurnEntity | null, requested: InputMode | undefined, hasOverride: boolean): InputMode {
  if (requested === 'follow_up' && active?.waitpoint?.kind === 'client_tool' && !active.cancellationPending) return requested;
  refuseWhileBlocked(active);
  // A coordinator waiting for its members takes no steer: messages queue behind its turn.
  const cooperating = active?.waitpoint?.kind === 'cooperation';
  if (requested === 'follow_up') return requested;
  if (requested === 'steer') {
    if (cooperating) throw new DomainError('state_conflict', 'The turn is waiting for its subagents; send the message without yuxi.mode (or follow_up) to queue it');
    return requested;
  }
  if (!active || hasOverride || cooperating) return 'follow_up';
  return 'steer';
}

/** Whether the session overview leaves an active turn possible (none, or the latest one settled, rules it out). */
export function mayHaveActiveTurn(summary: TurnSummary | null): boolean {
  return summary !== null && !(TERMINAL_TURN_STATUSES as readonly string[]).includes(summary.status);
}
