import type { Principal } from '#libs/auth';
import { TERMINAL_TURN_STATUSES } from '#libs/engine';
import type { AutomationTarget, FiringPrincipal, InvocationReason, OverlapPolicy, PauseReason } from '../automation.types.js';

/**
 * The pure decisions of a fire: whether the previous invocation's turn is active, what the
 * overlap policy then does, which refusal means the target is gone (and pauses the automation),
 * and the principal an automation acts as.
 */

/** The latest earlier invocation that accepted an input, as its input and turn are now. */
export interface PreviousInvocation {
  sessionId: string;
  inputStatus: string;
  turnId: string | null;
  turnStatus: string | null;
}

/** Its turn is active: the input still waits in the queue, or the turn it became has not ended. */
export function previousIsActive(previous: PreviousInvocation | null): boolean {
  if (!previous) return false;
  if (previous.inputStatus === 'pending') return true;
  return previous.turnStatus !== null && !(TERMINAL_TURN_STATUSES as readonly string[]).includes(previous.turnStatus);
}

export type OverlapDecision =
  /** Fire; `reason` null: no overlap (the reason is the fire's own: scheduled, catch_up, manual). `queuesBehind`: the input waits behind the active turn whatever it is doing. */
  | { fire: true; reason: Extract<InvocationReason, 'overlap_queued' | 'overlap_cancelled_previous'> | null; queuesBehind: boolean }
  | { fire: false; reason: 'overlap_skipped'; skipReason: 'pending_delivery' };

/** What the policy does when the previous invocation's turn is (or is not) active. */
export function decideOverlap(policy: OverlapPolicy, active: boolean): OverlapDecision {
  if (!active) return { fire: true, reason: null, queuesBehind: false };
  if (policy === 'skip') return { fire: false, reason: 'overlap_skipped', skipReason: 'pending_delivery' };
  // cancel_previous: the turn was asked to cancel first; the input queues behind it while it winds down.
  return { fire: true, reason: policy === 'queue' ? 'overlap_queued' : 'overlap_cancelled_previous', queuesBehind: true };
}

/**
 * The turn cancel_previous cancels before the fire: the previous invocation's, when it is active
 * and its input became a turn (an input still queued has no turn; the new one queues behind it).
 */
export function turnToCancel(policy: OverlapPolicy, previous: PreviousInvocation | null): { sessionId: string; turnId: string } | null {
  if (policy !== 'cancel_previous' || !previous || !previousIsActive(previous) || previous.turnId === null) return null;
  return { sessionId: previous.sessionId, turnId: previous.turnId };
}

/**
 * A refusal of the input that means the target is gone (the automation is paused with the
 * reason), or null: the input was refused for what it is (the invocation fails, the automation
 * stays active). A missing session or agent answers `not_found`.
 */
export function goneReason(target: AutomationTarget, errorCode: string): PauseReason | null {
  if (errorCode === 'user_suspended') return 'owner_unavailable';
  if (errorCode !== 'not_found') return null;
  return target.type === 'existing_session' ? 'target_session_deleted' : 'agent_deleted';
}

/** The principal an automation fires as: its creator's identity as stored, without per-key limits (no request to rate-limit). */
export function principalOf(stored: FiringPrincipal): Principal {
  return {
    userId: stored.userId,
    actorId: stored.actorId,
    keyId: stored.keyId,
    access: stored.access as Principal['access'],
    appId: stored.appId,
    endUser: stored.endUser,
    role: stored.role as Principal['role'],
    isAdmin: stored.isAdmin,
    limits: { perMinute: null, streams: null },
  };
}

/** The idempotency key of a scheduled time's fire (scope `automations.fire`): one per automation and time. */
export function scheduledKey(automationId: string, scheduledAt: Date): string {
  return `${automationId}:${scheduledAt.getTime()}`;
}
