import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { listEnvelope, type PageQuery } from '#libs/database';
import { DomainError } from '#libs/errors';
import { type AttachmentDto, type AttachmentListDto, FilesRepository, toAttachmentDto } from '#libs/files';
import { type AcceptedReceipt, cooperationRules, IdempotencyService, type InputEntity, InputsRepository, type ItemDto, type ItemListDto, ItemsRepository, mayHaveActiveTurn, type RunDto, RunsRepository, type SessionEntity, type SessionFilter, SessionsRepository, sessionStatus, toActiveMessageDto, toInputDto, toItemDto, toRunDto, toRunSummary, toSessionDto, toTurnDetailDto, toTurnDto, TreeRepository, type TurnDetailDto, type TurnListDto, TurnsRepository } from '#libs/engine';
import type { SessionDto, SessionListDto } from './dto/session.dto.js';
import { inheritedItemDto } from './inherited-items.js';
import type { AgentStateDto, InputDetailDto, QueueDto, SessionStateDto } from './dto/queue.dto.js';

/** Read side of the protocol: every read is scoped to the caller before anything else is loaded. */
@Injectable()
export class SessionQueriesService {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly items: ItemsRepository,
    private readonly inputs: InputsRepository,
    private readonly idempotency: IdempotencyService,
    private readonly files: FilesRepository,
    private readonly tree: TreeRepository,
  ) {}

  /** The session's attachments (formal file references of its workdir), with their input, message and artifact URL. */
  async listAttachments(principal: Principal, sessionId: string, page: PageQuery): Promise<AttachmentListDto> {
    await this.sessions.getVisible(principal.userId, sessionId);
    const { rows, hasMore } = await this.files.listInSession(sessionId, page);
    const data = rows.map(toAttachmentDto);
    return listEnvelope(data, hasMore);
  }

  /** The session resource, as its owner sees it. */
  async getSession(principal: Principal, sessionId: string): Promise<SessionDto> {
    const { usage, ...session } = await this.sessions.getVisible(principal.userId, sessionId, true);
    const dto = toSessionDto(session);
    return { ...dto, yuxi: { ...dto.yuxi, usage } };
  }

  /** Ensures the session is visible to the caller; used before streaming, which holds no connection afterwards. */
  async assertVisible(principal: Principal, sessionId: string): Promise<void> {
    await this.sessions.getVisible(principal.userId, sessionId);
  }

  async listSessions(principal: Principal, filter: SessionFilter, page: PageQuery): Promise<SessionListDto> {
    const { rows, hasMore } = await this.sessions.list(principal.userId, filter, page);
    const data = rows.map((row) => toSessionDto(row));
    return listEnvelope(data, hasMore);
  }

  async listTurns(principal: Principal, sessionId: string, page: PageQuery): Promise<TurnListDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    const { rows, hasMore } = await this.turns.listTurns(session, page);
    const data = rows.map(toTurnDto);
    return listEnvelope(data, hasMore);
  }

  async getTurn(principal: Principal, sessionId: string, turnId: string): Promise<TurnDetailDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    const turn = await this.turns.getTurn(session, turnId);
    const [runs, output] = await Promise.all([this.runs.runsOfTurn(turn.id), turn.resultRunId ? this.items.outputOfRun(turn.resultRunId) : []]);
    return toTurnDetailDto(turn, runs, output);
  }

  async getRun(principal: Principal, sessionId: string, runId: string): Promise<RunDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    return toRunDto(await this.runs.getRun(session, runId));
  }

  /**
   * Items in sequence order; while a run streams a message, that message too (in progress, from
   * the run's checkpoint) at the newest end: after the last page ascending, first descending.
   */
  async listItems(principal: Principal, sessionId: string, turnId: string | null, page: PageQuery): Promise<ItemListDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    // A turn's items are listed in the session that ran it (a fork's inherited turn: an ancestor).
    const scope = turnId === null ? session : { id: (await this.turns.getTurn(session, turnId)).sessionId, forkItemSeq: null };
    const active = await this.streamingMessage(session, turnId);
    // A cursor at the streaming message (the newest item) has nothing after it ascending, everything descending.
    const atActive = active !== null && page.after === active.id;
    const listed = atActive ? (page.order === 'desc' ? await this.items.listItems(scope, turnId, { ...page, after: undefined }) : null) : await this.items.listItems(scope, turnId, page);
    const rows = listed?.rows ?? [];
    // When the page's messages were received: one read of their inputs, only when the page has any.
    const sessionIds = [...new Set([session.id, ...rows.map((row) => row.sessionId)])];
    const receipts = await this.inputs.receivedAt(sessionIds, [...new Set(rows.flatMap((row) => (row.type === 'message' && row.inputId !== null ? [row.inputId] : [])))]);
    let data = rows.map((row) => (row.sessionId === session.id ? toItemDto(row, receipts) : inheritedItemDto(session.id, row, receipts)));
    let hasMore = listed?.hasMore ?? false;
    // Its item may have been written between the two reads: then the page has it already.
    if (active && !atActive && !data.some((item) => item.id === active.id)) {
      if (page.order === 'desc' && page.after === undefined) {
        data = [active, ...data];
        if (data.length > page.limit) {
          data = data.slice(0, page.limit);
          hasMore = true;
        }
      } else if (page.order !== 'desc' && !hasMore) {
        if (data.length < page.limit) data.push(active);
        else hasMore = true;
      }
    }
    const runIds = [...new Set(data.map((item) => item.yuxi.run_id).filter((id): id is string => id !== null))];
    const runs = await this.runs.runsByIds(runIds);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: hasMore,
      yuxi: { runs: runs.map(toRunSummary) },
    };
  }

  /** The message the session's current run streams (of `turnId`, when given); the overview rules most reads out without a query. */
  private async streamingMessage(session: SessionEntity, turnId: string | null): Promise<ItemDto | null> {
    const current = session.currentTurn;
    if (!mayHaveActiveTurn(current) || !current?.current_run_id || (turnId !== null && current.id !== turnId)) return null;
    const streaming = await this.runs.streamingMessage(current.current_run_id);
    return streaming ? toActiveMessageDto(streaming.run, streaming.checkpoint) : null;
  }

  async getQueue(principal: Principal, sessionId: string): Promise<QueueDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    const pending = await this.inputs.pending(sessionId);
    const attachments = await this.attachmentsOf(pending);
    return { object: 'yuxi.session.queue', session_id: sessionId, paused: session.queuePaused, data: pending.map((input) => toInputDto(input, attachments.get(input.id))) };
  }

  async getInput(principal: Principal, sessionId: string, inputId: string): Promise<InputDetailDto> {
    await this.sessions.getVisible(principal.userId, sessionId);
    const input = await this.inputs.get(sessionId, inputId);
    const items = input.status === 'consumed' ? await this.items.itemsOfInput(sessionId, input.id) : [];
    const attachments = await this.attachmentsOf([input]);
    const receipts = new Map([[input.id, input.receivedAt]]);
    return { ...toInputDto(input, attachments.get(input.id)), items: items.map((item) => toItemDto(item, receipts)) };
  }

  /** The existing attachments of inputs that were submitted with files, by input id. */
  private async attachmentsOf(inputs: InputEntity[]): Promise<Map<string, AttachmentDto[]>> {
    const byInput = new Map<string, AttachmentDto[]>();
    const withFiles = inputs.filter((input) => input.attachmentFileIds.length > 0).map((input) => input.id);
    for (const file of await this.files.filesOfInputs(withFiles)) {
      if (!file.inputId) continue;
      byInput.set(file.inputId, [...(byInput.get(file.inputId) ?? []), toAttachmentDto(file)]);
    }
    return byInput;
  }

  async getState(principal: Principal, sessionId: string): Promise<SessionStateDto> {
    const session = await this.sessions.getVisible(principal.userId, sessionId);
    return {
      object: 'yuxi.session.state',
      session_id: session.id,
      status: sessionStatus(session),
      current_turn: session.currentTurn,
      queue_paused: session.queuePaused,
      queued_input_count: session.pendingInputCount,
      archived: session.archived,
      context: await this.turns.latestContext(session),
      compaction_mode: session.compactionMode,
      agent_state: await this.agentState(principal, session),
    };
  }

  /** The tree's durable state (root included in `usage`), for a root that coordinates or any member. */
  private async agentState(principal: Principal, session: SessionEntity): Promise<AgentStateDto> {
    if (session.depth === 0 && session.treeMaxConcurrent === null) return {};
    const root = session.depth === 0 ? session : await this.sessions.getVisible(principal.userId, session.rootSessionId);
    const members = await this.tree.members(root.id);
    const rootActive = root.currentTurn !== null && ['queued', 'in_progress', 'requires_action'].includes(root.currentTurn.status);
    const stopped = root.treeStoppedAt !== null;
    return {
      cooperation: {
        root_session_id: root.id,
        stopped,
        stopping: stopped && (rootActive || members.some((m) => m.activeTurnId !== null)),
        members: members.map((m) => ({
          session_id: m.id,
          parent_session_id: m.parentSessionId ?? root.id,
          agent_id: m.agentId,
          name: m.name,
          depth: m.depth,
          status: cooperationRules.memberSessionStatus(m),
          current_turn_id: m.activeTurnId,
          queue_paused: m.queuePaused,
          waitpoint_kind: m.waitpointKind,
        })),
        usage: await this.tree.treeUsage(root.id),
      },
    };
  }

  async getReceipt(principal: Principal, sessionId: string, key: string): Promise<AcceptedReceipt> {
    await this.sessions.getVisible(principal.userId, sessionId);
    const receipt = await this.idempotency.findEventReceipt(principal.userId, sessionId, key);
    if (!receipt) throw new DomainError('not_found', 'No committed submission with this Idempotency-Key yet; the original request may still be in flight');
    return receipt;
  }
}
