import { unixSeconds } from '#libs/database';
import type { AutomationRecord, AutomationTarget, InvocationRecord } from '../automation.types.js';
import type { AutomationDto, AutomationTargetDto, InvocationDto } from '../dto/automation-view.dto.js';

/** A target as the resource shows it (the upstream's view: `agent` null, `vault_ids` empty). */
export function targetView(target: AutomationTarget): AutomationTargetDto {
  if (target.type === 'existing_session') return { type: target.type, session_id: target.session_id, instructions: target.instructions };
  return { type: target.type, agent: null, agent_id: target.agent_id, environment: target.environment, input: target.input, metadata: target.metadata, vault_ids: [] };
}

/** `agent.automation`: times in Unix seconds; `expression`/`timezone` only periodic, `run_at` only once. */
export function toAutomationDto(a: AutomationRecord): AutomationDto {
  return {
    id: a.id,
    object: 'agent.automation',
    name: a.name,
    type: a.type,
    ...(a.type === 'periodic' ? { expression: a.expression!, timezone: a.timezone! } : { run_at: unixSeconds(a.runAt!) }),
    status: a.status,
    pause_reason: a.pauseReason,
    target: targetView(a.target),
    created_at: unixSeconds(a.createdAt),
    created_by: { type: 'developer' },
    metadata: a.metadata,
    yuxi: { overlap: a.overlap, catch_up: a.catchUp, next_run_at: unixSeconds(a.nextRunAt) },
  };
}

/**
 * The automation as a scheduled invocation keeps it (`source.automation`): the resource without
 * the target's input or instructions (up to the input bound on every fire, skipped ones included);
 * the target's input is the session's, through the invocation's session_id.
 */
export function toAutomationSnapshot(a: AutomationRecord): AutomationDto {
  return snapshotOfView(toAutomationDto(a));
}

/** The same snapshot from the resource's view. */
export function snapshotOfView(view: AutomationDto): AutomationDto {
  const target = { ...view.target } as Record<string, unknown>;
  delete target.input;
  delete target.instructions;
  return { ...view, target: target as unknown as AutomationTargetDto };
}

/** `agent.automation.invocation`. */
export function toInvocationDto(v: InvocationRecord): InvocationDto {
  return {
    id: v.id,
    object: 'agent.automation.invocation',
    automation_id: v.automationId,
    created_at: unixSeconds(v.createdAt),
    scheduled_at: unixSeconds(v.scheduledAt),
    session_id: v.sessionId,
    status: v.status,
    skip_reason: v.skipReason,
    error: v.error,
    source: v.source === 'automation' ? { type: 'automation', automation: v.automationSnapshot as AutomationDto } : { type: 'manual' },
    yuxi: { input_id: v.inputId, turn_id: v.turnId, reason: v.reason, fired_at: unixSeconds(v.firedAt) },
  };
}
