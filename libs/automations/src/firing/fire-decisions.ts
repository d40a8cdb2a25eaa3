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

/** What the fire is, for the overlap: a new session is independent of the previous one (nothing to queue behind); a once automation has no later time. */
export interface OverlapContext {
  targetType: AutomationTarget['type'];
  once: boolean;
}

/**
 * What the policy does when the previous invocation's turn is (or is not) active. `queue` with a
 * new_session target starts the new session at once (a new session waits behind nothing; the
 * active-turn cap per account bounds them), so it fires with its own reason. A once automation
 * is never skipped: it has no later time, so `skip` queues it instead.
 */
export function decideOverlap(policy: OverlapPolicy, active: boolean, context: OverlapContext = { targetType: 'existing_session', once: false }): OverlapDecision {
  if (!active) return { fire: true, reason: null, queuesBehind: false };
  const effective = policy === 'skip' && context.once ? 'queue' : policy;
  if (effective === 'skip') return { fire: false, reason: 'overlap_skipped', skipReason: 'pending_delivery' };
  if (effective === 'queue' && context.targetType === 'new_session') return { fire: true, reason: null, queuesBehind: false };
  // cancel_previous: the turn was asked to cancel first; the input queues behind it while it winds down.
  return { fire: true, reason: effective === 'queue' ? 'overlap_queued' : 'overlap_cancelled_previous', queuesBehind: true };
}

/**
 * The turn cancel_previous cancels before the fire (the caller tested the policy): the previous
 * invocation's, when it is active and its input became a turn (an input still queued has no turn;
 * the new one queues behind it).
 */
export function turnToCancel(previous: PreviousInvocation | null): { sessionId: string; turnId: string } | null {
  if (!previous || !previousIsActive(previous) || previous.turnId === null) return null;
  return { sessionId: previous.sessionId, turnId: previous.turnId };
}

/**
 * A refusal of the input that means the target is gone (the automation is paused with the
 * reason), or null: the input was refused for what it is (the invocation fails, the automation
 * stays active). A missing session answers `not_found`; for a new session only a refusal that
 * names the target's agent means the agent is gone (a missing environment file, say, is a
 * refusal of the input, not a gone agent). A suspended owner or dead credentials pause it too.
 */
export function goneReason(target: AutomationTarget, error: { code: string; message: string }): PauseReason | null {
  if (error.code === 'user_suspended' || error.code === OWNER_UNAVAILABLE) return 'owner_unavailable';
  if (error.code !== 'not_found') return null;
  if (target.type === 'existing_session') return 'target_session_deleted';
  return error.message === `Agent ${target.agent_id} not found` ? 'agent_deleted' : null;
}

/** The error code of a fire whose creator's credentials no longer act (a revoked or expired key). */
export const OWNER_UNAVAILABLE = 'unauthorized';

/** The creator as they are now: the role and suspension of the user, and whether the key that created the automation still acts. */
export interface LivePrincipal {
  role: string | null;
  suspended: boolean;
  keyLive: boolean;
}

/** Why the creator can no longer act (the fire fails and the automation pauses), or null. */
export function deadPrincipal(live: LivePrincipal): { code: 'user_suspended' | typeof OWNER_UNAVAILABLE; message: string } | null {
  if (live.suspended) return { code: 'user_suspended', message: "The automation's owner is suspended" };
  if (!live.keyLive) return { code: OWNER_UNAVAILABLE, message: 'The API key that created the automation was revoked or has expired' };
  return null;
}

/** The principal an automation fires as: its creator's identity as stored (the role as it is now), without per-key limits (no request to rate-limit). */
export function principalOf(stored: FiringPrincipal, live?: Pick<LivePrincipal, 'role'>): Principal {
  // The role (and what it allows) is the user's now, never the one stored at create: a demoted admin's automations act as a member.
  const role = live ? live.role : stored.role;
  return {
    userId: stored.userId,
    actorId: stored.actorId,
    keyId: stored.keyId,
    access: stored.access as Principal['access'],
    appId: stored.appId,
    endUser: stored.endUser,
    role: role as Principal['role'],
    isAdmin: live ? role === 'admin' : stored.isAdmin,
    limits: { perMinute: null, streams: null },
  };
}

/** The idempotency key of a scheduled time's fire (scope `automations.fire`): one per automation and time. */
export function scheduledKey(automationId: string, scheduledAt: Date): string {
  return `${automationId}:${scheduledAt.getTime()}`;
}
