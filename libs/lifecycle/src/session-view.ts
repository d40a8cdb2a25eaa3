import { unixSeconds } from '#libs/database';
import type { AcceptedReceipt } from '#libs/inputs';
import type { SessionEntity as Session, TurnSummary } from '#libs/sessions';
import { TERMINAL_TURN_STATUSES } from '#libs/turns';

/** A session's work status (derived, never stored): see sessionStatus. */
export const SESSION_STATUSES = ['idle', 'in_progress', 'requires_action', ...TERMINAL_TURN_STATUSES] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

/**
 * Work status from the latest turn: an active turn shows its own state, queued work that will run
 * shows in_progress, otherwise the latest turn's terminal state, or idle for a session with no turns.
 */
export function sessionStatus(session: Session): SessionStatus {
  const status = session.currentTurn?.status;
  if (status === 'requires_action') return 'requires_action';
  if (status === 'in_progress' || status === 'queued') return 'in_progress';
  if (session.pendingInputCount > 0 && !session.queuePaused) return 'in_progress';
  // The summary's status is a turn status (the sessions lib stores it without knowing the turn machine).
  return (status ?? 'idle') as SessionStatus;
}

/**
 * The session resource as the api shows it (protocol's SessionDto documents it); here because the
 * worker announces the members it creates with it (`agent.session.created`).
 */
export interface SessionView {
  id: string;
  object: 'agent.session';
  agent: { id: string; model: string };
  created_at: number;
  last_active_at: number;
  status: string;
  yuxi: {
    title: string;
    project_id: string | null;
    is_pinned: boolean;
    archived: boolean;
    unread: boolean;
    tool_approval_mode: string;
    compaction_mode: string | null;
    queue_paused: boolean;
    queued_input_count: number;
    current_turn: TurnSummary | null;
    parent_session_id: string | null;
    root_session_id: string;
    depth: number;
    spawned_by: { turn_id: string; call_id: string } | null;
    subagent: { name: string; task: string } | null;
    metadata: Record<string, string>;
    revision: number;
    receipt: AcceptedReceipt | null;
  };
}

/** The session resource; `receipt` only on the create response that accepted an input. */
export function toSessionDto(session: Session, receipt: AcceptedReceipt | null = null): SessionView {
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
      parent_session_id: session.parentSessionId,
      root_session_id: session.rootSessionId,
      depth: session.depth,
      spawned_by: session.spawnedTurnId && session.spawnedCallId ? { turn_id: session.spawnedTurnId, call_id: session.spawnedCallId } : null,
      subagent: session.subagent,
      metadata: session.metadata,
      revision: session.revision,
      receipt,
    },
  };
}
