import { unixSeconds } from '#libs/database';
import type { AcceptedReceipt } from '#libs/inputs';
import type { SessionEntity } from '#libs/sessions';
import type { TurnEntity } from '#libs/turns';
import type { SessionDto } from './dto/session.dto.js';

export interface SessionViewContext {
  latestTurn: TurnEntity | null;
  pendingCount: number;
  receipt: AcceptedReceipt | null;
}

/**
 * Work status from the latest turn: an active turn shows its own state, queued work that will run
 * shows in_progress, otherwise the latest turn's terminal state, or idle for a session with no turns.
 */
export function sessionStatus(session: SessionEntity, ctx: SessionViewContext): string {
  const turn = ctx.latestTurn;
  if (turn?.status === 'requires_action') return 'requires_action';
  if (turn?.status === 'in_progress' || turn?.status === 'queued') return 'in_progress';
  if (ctx.pendingCount > 0 && !session.queuePaused) return 'in_progress';
  return turn?.status ?? 'idle';
}

export function toSessionDto(session: SessionEntity, ctx: SessionViewContext): SessionDto {
  const turn = ctx.latestTurn;
  return {
    id: session.id,
    object: 'agent.session',
    agent: { id: session.agentId, model: session.model },
    created_at: unixSeconds(session.createdAt),
    last_active_at: unixSeconds(session.lastActiveAt),
    status: sessionStatus(session, ctx),
    yuxi: {
      title: session.title,
      project_id: session.projectId,
      is_pinned: session.isPinned,
      archived: session.archived,
      unread: session.unread,
      tool_approval_mode: session.toolApprovalMode,
      queue_paused: session.queuePaused,
      queued_input_count: ctx.pendingCount,
      current_turn: turn
        ? { id: turn.id, status: turn.status, current_run_id: turn.currentRunId, result_run_id: turn.resultRunId, waitpoint: turn.waitpoint }
        : null,
      receipt: ctx.receipt,
    },
  };
}
