import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import type { AgentPolicySnapshot, ToolApprovalMode } from './agent.entity.js';

/** How strict each approval mode is: a caller bound by a pinned agent may move up this scale, never down. */
const STRICTNESS: Record<ToolApprovalMode, number> = { always_trust: 0, default: 1, always_ask: 2 };

/**
 * The agent's managers: its owner (a private agent's creator) and administrators, who manage every
 * agent, public ones included. An app's end user manages nothing, whoever owns the app's key.
 */
export function managesAgent(principal: Pick<Principal, 'isAdmin' | 'actorId' | 'appId'>, policy: Pick<AgentPolicySnapshot, 'owner_id'>): boolean {
  if (principal.appId !== null) return false;
  return principal.isAdmin || (policy.owner_id !== null && policy.owner_id === principal.actorId);
}

/**
 * A model override on a session of this agent: managers may pick any model (the deployment's
 * MODEL_ALLOWLIST is checked by ModelRegistry.validate), other callers only the agent's own model
 * (or the session's current one) or one of its `allowed_models`. `policy` absent: a session from before agents had one.
 */
export function assertModelOverride(principal: Pick<Principal, 'isAdmin' | 'actorId' | 'appId'>, policy: AgentPolicySnapshot | undefined, agentModel: string, model: string, field: string): void {
  if (!policy || model === agentModel || model === policy.model || managesAgent(principal, policy)) return;
  if (policy.allowed_models?.includes(model)) return;
  throw new DomainError('model_not_allowed', `Model "${model}" is not one this agent lets its callers switch to (${field}); allowed: ${policy.allowed_models?.join(', ') || 'none'}`, {
    fields: [{ field, errors: ['is not in the agent\'s allowed_models'] }],
  });
}

/** An approval mode a caller sets (session create, session update, per message): never below a pinned agent's for callers who do not manage it. */
export function assertApprovalMode(principal: Pick<Principal, 'isAdmin' | 'actorId' | 'appId'>, policy: AgentPolicySnapshot | undefined, mode: string, field: string): void {
  if (!policy?.tool_approval_pinned || managesAgent(principal, policy)) return;
  const floor = policy.tool_approval_mode;
  if ((STRICTNESS[mode as ToolApprovalMode] ?? -1) >= STRICTNESS[floor]) return;
  throw new DomainError('tool_approval_pinned', `The agent's owner pinned its approval mode at ${floor}: ${field} may raise it, not lower it to ${mode}`, {
    fields: [{ field, errors: [`must be at least as strict as ${floor}`] }],
  });
}

/** `approve_session` widens approval for the rest of the session: not for callers bound by a pinned agent (the call alone is approved). */
export function mayTrustForSession(principal: Pick<Principal, 'isAdmin' | 'actorId' | 'appId'>, policy: AgentPolicySnapshot | undefined): boolean {
  return !policy?.tool_approval_pinned || managesAgent(principal, policy);
}

/**
 * The mode a cooperation member of this agent runs with: its coordinator's, raised to the agent's
 * own where the agent is pinned (a coordinator's session cannot lower a pinned member agent; the
 * worker creating the member knows no caller, so the pin binds every tree alike).
 */
export function atLeastPinned(mode: string, policy: AgentPolicySnapshot | undefined): string {
  if (!policy?.tool_approval_pinned) return mode;
  return (STRICTNESS[mode as ToolApprovalMode] ?? -1) >= STRICTNESS[policy.tool_approval_mode] ? mode : policy.tool_approval_mode;
}
