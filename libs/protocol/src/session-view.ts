import { unixSeconds } from '#libs/database';
import type { AcceptedReceipt } from '#libs/inputs';
import type { SessionEntity } from '#libs/sessions';
import { TERMINAL_TURN_STATUSES } from '#libs/turns';
import type { SessionDto } from './dto/session.dto.js';

/** A session's work status (derived, never stored): see sessionStatus. */
export const SESSION_STATUSES = ['idle', 'in_progress', 'requires_action', ...TERMINAL_TURN_STATUSES] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/**
 * Work status from the latest turn: an active turn shows its own state, queued work that will run
 * shows in_progress, otherwise the latest turn's terminal state, or idle for a session with no turns.
 */
export function sessionStatus(session: SessionEntity): SessionStatus {
  const status = session.currentTurn?.status;
  if (status === 'requires_action') return 'requires_action';
  if (status === 'in_progress' || status === 'queued') return 'in_progress';
  if (session.pendingInputCount > 0 && !session.queuePaused) return 'in_progress';
  // The summary's status is a turn status (the sessions lib stores it without knowing the turn machine).
  return (status ?? 'idle') as SessionStatus;
}

/** The session resource; `receipt` only on the create response that accepted an input. */
export function toSessionDto(session: SessionEntity, receipt: AcceptedReceipt | null = null): SessionDto {
  return {
    id: session.id,
    object: 'agent.session',
    agent: { id: session.agentId, model: session.model },
    created_at: unixSeconds(session.createdAt),
    last_active_at: unixSeconds(session.lastActiveAt),
    status: sessionStatus(session),
    yuxi: {
      title: session.title,
      project_id: session.projectId,
      is_pinned: session.isPinned,
      archived: session.archived,
      unread: session.unread,
      tool_approval_mode: session.toolApprovalMode,
      compaction_mode: session.compactionMode ?? null,
      queue_paused: session.queuePaused,
      queued_input_count: session.pendingInputCount,
      current_turn: session.currentTurn,
      receipt,
    },
  };
}
