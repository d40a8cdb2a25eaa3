import { DomainError, type ErrorCode } from '#libs/errors';
import type { OutboxBatch } from '#libs/events';
import type { SessionEntity, Lease, RunEntity, ToolCallSpec, TurnEntity, Waitpoint } from '#libs/engine';

/**
 * Rows of the session aggregate as the repositories return them, for orchestrator unit tests:
 * a plain root session, an executing turn and its leased run. Each takes what a test changes.
 */
const AT = new Date('2026-01-01T00:00:00Z');

export function aSession(over: Partial<SessionEntity> = {}): SessionEntity {
  return {
    id: 's1',
    ownerId: 'owner-1',
    agentId: 'agent-1',
    model: 'gpt-test',
    toolApprovalMode: 'never',
    compactionMode: null,
    instructions: '',
    agentSnapshot: null,
    trustedTools: [],
    title: 'Session',
    projectId: null,
    workdirId: 'w1',
    environment: null,
    isPinned: false,
    archived: false,
    unread: false,
    queuePaused: false,
    inputSeq: '1',
    itemSeq: '0',
    turnSeq: 1,
    pendingInputCount: 0,
    currentTurn: null,
    parentSessionId: null,
    rootSessionId: over.id ?? 's1',
    depth: 0,
    spawnedTurnId: null,
    spawnedCallId: null,
    subagent: null,
    treeMaxConcurrent: null,
    treeStoppedAt: null,
    forkedFromSessionId: null,
    forkedFromTurnId: null,
    forkPosition: null,
    forkItemSeq: null,
    forkTurnSeq: null,
    metadata: {},
    ttlArchiveAfterS: null,
    ttlDeleteAfterS: null,
    revision: 1,
    deletedAt: null,
    createdAt: AT,
    lastActiveAt: AT,
    updatedAt: AT,
    ...over,
  };
}

export function aTurn(over: Partial<TurnEntity> = {}): TurnEntity {
  return {
    id: 't1',
    sessionId: 's1',
    seq: 1,
    status: 'in_progress',
    agentId: 'agent-1',
    model: 'gpt-test',
    currentRunId: 'r1',
    resultRunId: null,
    waitpoint: null,
    cancellationPending: false,
    error: null,
    usage: null,
    traceId: null,
    context: null,
    createdAt: AT,
    startedAt: AT,
    completedAt: null,
    ...over,
  };
}

export function aRun(over: Partial<RunEntity> = {}): RunEntity {
  return {
    id: 'r1',
    turnId: 't1',
    sessionId: 's1',
    seq: 1,
    status: 'in_progress',
    inputIds: [],
    model: 'gpt-test',
    config: {},
    resumeFromRunId: null,
    leaseOwner: 'worker-1',
    leaseExpiresAt: AT,
    epoch: 1,
    checkpoint: null,
    createdAt: AT,
    startedAt: AT,
    completedAt: null,
    error: null,
    usage: null,
    ...over,
  };
}

/** A question waitpoint (one free-text question, q1) of run r1. */
export function aWaitpoint(over: Partial<Waitpoint> = {}): Waitpoint {
  return { id: 'wp1', kind: 'question', run_id: 'r1', created_at: 1, questions: [{ question_id: 'q1', question: 'Which?', options: [], multi_select: false, allow_other: true }], ...over };
}

/** A waitpoint on tool calls (approval, client_tool, cooperation) of run r1: no questions. */
export function aCallsWaitpoint(kind: 'approval' | 'client_tool' | 'cooperation', calls: ToolCallSpec[], over: Partial<Waitpoint> = {}): Waitpoint {
  return { id: 'wp1', kind, run_id: 'r1', created_at: 1, tool_calls: calls, ...over };
}

/** A turn waiting at `waitpoint` (requires_action, or in_progress for a coordinator's wait), its run suspended. */
export function aWaitingTurn(waitpoint: Waitpoint, over: Partial<TurnEntity> = {}): TurnEntity {
  return aTurn({ status: waitpoint.kind === 'cooperation' ? 'in_progress' : 'requires_action', waitpoint, currentRunId: waitpoint.run_id, ...over });
}

export const aLease = (over: Partial<Lease> = {}): Lease => ({ runId: 'r1', owner: 'worker-1', epoch: 1, ...over });

/** An outbox batch as EventOutbox.append returns it (tests compare it by identity). */
export const aBatch = (sessionId = 's1'): OutboxBatch => ({ sessionId, rows: [] });

/** The types of the events in the order given (what an orchestrator announced). */
export const typesOf = (events: readonly { type: string }[]): string[] => events.map((e) => e.type);

/** For assert.rejects/throws: a DomainError with this code (and these details, when given). */
export const domainError =
  (code: ErrorCode, details?: Record<string, unknown>) =>
  (error: unknown): boolean => {
    if (!(error instanceof DomainError) || error.code !== code) return false;
    for (const [key, value] of Object.entries(details ?? {})) if (JSON.stringify(error.details[key]) !== JSON.stringify(value)) return false;
    return true;
  };

/** The DomainError code `fn` throws (null: it returns; anything else thrown is named as such). */
export function codeOf(fn: () => unknown): string | null {
  try {
    fn();
    return null;
  } catch (error) {
    return error instanceof DomainError ? error.code : `not a DomainError: ${String(error)}`;
  }
}
