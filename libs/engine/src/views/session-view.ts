import { unixSeconds } from '#libs/database';
import type { SessionBudgetView } from '#libs/budgets';
import type { UsageTotals } from '#libs/usage';
import { type SessionTtl, ttlExpiresAt, ttlView } from '#libs/agents';
import type { AcceptedReceipt } from '../tables/receipt.entity.js';
import { SESSION_STATUS_MACHINE, type SessionStatus, sessionStatusOf } from '../machines/session-states.js';
import { type SessionEntity as Session, type TurnSummary } from '../tables/session.entity.js';
import type { ForkedFrom } from '../forks/lineage.types.js';
import { type EnvironmentView, environmentView } from './environment-view.js';

/** A session's work status (derived, never stored), declared once in libs/engine (SESSION_STATUS_MACHINE). */
export const SESSION_STATUSES = SESSION_STATUS_MACHINE.states;
export type { SessionStatus };

/** The session's status from its current-turn overview and its queue: sessionStatusOf. */
export function sessionStatus(session: Session): SessionStatus {
  return sessionStatusOf({ turnStatus: session.currentTurn?.status ?? null, pendingInputCount: session.pendingInputCount, queuePaused: session.queuePaused });
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
  /** The upstream Agents API's fields its official SDK reads (see upstreamFields). */
  environment: EnvironmentView;
  metadata: Record<string, string>;
  usage: null;
  required_actions: RequiredAction[];
  error: string | null;
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
    /** The session and turn this session was forked from; null: not a fork. */
    forked_from: ForkedFrom | null;
    metadata: Record<string, string>;
    revision: number;
    receipt: AcceptedReceipt | null;
    /** The TTL the session goes by (its own, its project's, its agent's: the shortest); null: none. */
    ttl: SessionTtl | null;
    /** Unix seconds: when the TTL deletes the session if it stays idle (else archives it, with an archive TTL only); null: never. */
    expires_at: number | null;
    /** The session's own budget: set where the answer read or wrote it (create, update, get, list); null: none. */
    budget?: SessionBudgetView | null;
    /** The GET of one session only: the sums of its usage ledger. */
    usage?: UsageTotals;
  };
}

/**
 * What the session waits for, in the upstream Agents API's `required_actions` form: a client tool
 * waitpoint's calls as `function_call` actions, an approval waitpoint's calls as
 * `mcp_approval_request` actions (whose `request_id` names turn, waitpoint and call, so an answer
 * needs no lookup). Questions and budget stops have no upstream form: they are read from
 * `yuxi.current_turn.waitpoint` and answered with `yuxi.session.input.resume`.
 */
export type RequiredAction =
  | { type: 'function_call'; turn_id: string; call_id: string; name: string; arguments: unknown }
  | {
      type: 'mcp_approval_request';
      turn_id: string;
      request_id: string;
      request: { type: 'mcp_tool_call'; server_label: string; name: string; arguments: unknown; message: string };
    };

/** The separator of an approval request id's parts: turn and waitpoint ids never hold it. */
const REQUEST_ID_SEPARATOR = ':';

/** `request_id` of an approval call: `<turn_id>:<waitpoint_id>:<call_id>`. */
export function approvalRequestId(turnId: string, waitpointId: string, callId: string): string {
  return [turnId, waitpointId, callId].join(REQUEST_ID_SEPARATOR);
}

/** The turn, waitpoint and call an approval request id names; null when it is not one. */
export function parseApprovalRequestId(requestId: string): { turnId: string; waitpointId: string; callId: string } | null {
  const first = requestId.indexOf(REQUEST_ID_SEPARATOR);
  const second = first < 0 ? -1 : requestId.indexOf(REQUEST_ID_SEPARATOR, first + 1);
  if (first <= 0 || second <= first + 1 || second === requestId.length - 1) return null;
  return { turnId: requestId.slice(0, first), waitpointId: requestId.slice(first + 1, second), callId: requestId.slice(second + 1) };
}

/** The model's arguments as the JSON object they hold (the upstream field is the value), else the text as sent. */
function argumentsValue(text: string): unknown {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : text;
  } catch {
    return text;
  }
}

interface OpenWaitpoint {
  id: string;
  kind: string;
  tool_calls?: { call_id: string; name: string; arguments: string }[];
}

function requiredActions(turn: TurnSummary | null): RequiredAction[] {
  if (turn?.status !== 'requires_action' || turn.waitpoint === null) return [];
  const waitpoint = turn.waitpoint as OpenWaitpoint;
  const calls = waitpoint.tool_calls ?? [];
  if (waitpoint.kind === 'client_tool') {
    return calls.map((call) => ({ type: 'function_call', turn_id: turn.id, call_id: call.call_id, name: call.name, arguments: argumentsValue(call.arguments) }));
  }
  if (waitpoint.kind === 'approval') {
    return calls.map((call) => ({
      type: 'mcp_approval_request',
      turn_id: turn.id,
      request_id: approvalRequestId(turn.id, waitpoint.id, call.call_id),
      request: { type: 'mcp_tool_call', server_label: 'yuxi', name: call.name, arguments: argumentsValue(call.arguments), message: `Approve the call of ${call.name}?` },
    }));
  }
  return [];
}

/** The session resource; `receipt` only on the create response that accepted an input. */
export function toSessionDto(session: Session, receipt: AcceptedReceipt | null = null): SessionView {
  const status = sessionStatus(session);
  return {
    id: session.id,
    object: 'agent.session',
    agent: { id: session.agentId, model: session.model },
    created_at: unixSeconds(session.createdAt),
    last_active_at: unixSeconds(session.lastActiveAt),
    status,
    environment: environmentView(session.environment, session.workdirId),
    metadata: session.metadata,
    // The upstream field stays null: the session's sums are `yuxi.usage` (on its GET).
    usage: null,
    required_actions: requiredActions(session.currentTurn),
    error: status === 'failed' && session.currentTurn ? `The latest turn (${session.currentTurn.id}) failed: its error is on the turn.` : null,
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
      forked_from: forkedFrom(session),
      metadata: session.metadata,
      revision: session.revision,
      receipt,
      ttl: ttlView(effectiveTtlOf(session)),
      expires_at: ttlExpiresAt(effectiveTtlOf(session), session.lastActiveAt, session.archived),
    },
  };
}

function effectiveTtlOf(session: Session): { archiveAfterS: number | null; deleteAfterS: number | null } {
  return { archiveAfterS: session.ttlArchiveAfterS ?? null, deleteAfterS: session.ttlDeleteAfterS ?? null };
}

function forkedFrom(session: Session): ForkedFrom | null {
  if (session.forkedFromSessionId === null || session.forkedFromTurnId === null || session.forkPosition === null) return null;
  return { session_id: session.forkedFromSessionId, turn_id: session.forkedFromTurnId, position: session.forkPosition };
}
