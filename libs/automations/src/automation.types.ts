/**
 * Automations as stored and as the public API shows them (the upstream Agents API's
 * `agent.automation` and `agent.automation.invocation`, with `yuxi` extensions). Shared by the
 * api's use cases, the firing path and the timers: the one place these names are spelled.
 */

export const AUTOMATION_TYPES = ['periodic', 'once'] as const;
export type AutomationType = (typeof AUTOMATION_TYPES)[number];

export const AUTOMATION_STATUSES = ['active', 'paused', 'completed'] as const;
export type AutomationStatus = (typeof AUTOMATION_STATUSES)[number];

/** What a scheduled time does while the previous invocation's turn is still active. */
export const OVERLAP_POLICIES = ['skip', 'queue', 'cancel_previous'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** What happens to scheduled times missed while nothing could fire them (all workers down, timers lost). */
export const CATCH_UP_POLICIES = ['none', 'latest', 'all'] as const;
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];

/** Why the service (not a caller) paused an automation. */
export const PAUSE_REASONS = ['target_session_deleted', 'agent_deleted', 'owner_unavailable'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

export const INVOCATION_STATUSES = ['queued', 'completed', 'failed', 'skipped'] as const;
export type InvocationStatus = (typeof INVOCATION_STATUSES)[number];

export const INVOCATION_SOURCES = ['automation', 'manual'] as const;
export type InvocationSource = (typeof INVOCATION_SOURCES)[number];

/** `skip_reason`: `pending_delivery` (the upstream value: the previous invocation's turn is still active), `missed` (catch-up policy). */
export const SKIP_REASONS = ['pending_delivery', 'missed'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** `yuxi.reason`: what the invocation did and why, one code each. */
export const INVOCATION_REASONS = [
  'scheduled', // fired at its scheduled time
  'manual', // run now
  'catch_up', // a missed time fired late under catch_up latest|all
  'overlap_queued', // accepted behind the previous invocation's active turn (overlap queue)
  'overlap_cancelled_previous', // the previous invocation's active turn was cancelled first (overlap cancel_previous)
  'overlap_skipped', // not fired: the previous invocation's turn is active (overlap skip)
  'missed', // not fired: missed, and the catch_up policy does not fire it
  'target_unavailable', // failed: the target session or the agent is gone (the automation paused)
  'rejected', // failed: the input was refused (validation, limits); error says why
] as const;
export type InvocationReason = (typeof INVOCATION_REASONS)[number];

/** The identity an automation fires as: its creator's, as the principal was when it was created. */
export interface FiringPrincipal {
  userId: string;
  actorId: string;
  keyId: string | null;
  access: string;
  appId: string | null;
  endUser: string | null;
  role: string | null;
  isAdmin: boolean;
}

/** A user message as the upstream `input` param sends it (validated at create with the session parser). */
export type TargetInputMessage = Record<string, unknown>;

export type AutomationTarget =
  | {
      type: 'new_session';
      agent_id: string;
      /** The upstream environment param as sent (`{type: "none"}` when absent). */
      environment: Record<string, unknown>;
      input: TargetInputMessage[];
      metadata: Record<string, string>;
    }
  | { type: 'existing_session'; session_id: string; instructions: string };

/** A row of `automations`. */
export interface AutomationRecord {
  id: string;
  ownerId: string;
  principal: FiringPrincipal;
  name: string;
  type: AutomationType;
  expression: string | null;
  timezone: string | null;
  runAt: Date | null;
  target: AutomationTarget;
  targetSessionId: string | null;
  agentId: string | null;
  metadata: Record<string, string>;
  overlap: OverlapPolicy;
  catchUp: CatchUpPolicy;
  status: AutomationStatus;
  pauseReason: PauseReason | null;
  /** The next time to fire while active; null otherwise. */
  nextRunAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A row of `automation_invocations`, with the turn its input became (read through the input). */
export interface InvocationRecord {
  id: string;
  automationId: string;
  ownerId: string;
  source: InvocationSource;
  /** The scheduled time; null for a manual run. */
  scheduledAt: Date | null;
  status: InvocationStatus;
  skipReason: SkipReason | null;
  reason: InvocationReason;
  error: { code: string; message: string } | null;
  sessionId: string | null;
  inputId: string | null;
  turnId: string | null;
  /** The automation's public view when a scheduled time fired (source.automation). */
  automationSnapshot: unknown;
  /** When the input was accepted (lag = firedAt - scheduledAt); null when nothing was accepted. */
  firedAt: Date | null;
  createdAt: Date;
}
