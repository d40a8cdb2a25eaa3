import { unixSeconds } from '#libs/database';
import type { AutomationRecord, InvocationRecord } from '../automation.types.js';

/**
 * The public views the firing path needs: an automation's (an invocation's `source.automation`
 * snapshot) and an invocation's (run now's response). Upstream shapes with the `yuxi` extensions.
 */
export function automationView(a: AutomationRecord): Record<string, unknown> {
  const target =
    a.target.type === 'new_session'
      ? { type: 'new_session', agent: null, agent_id: a.target.agent_id, environment: a.target.environment, input: a.target.input, metadata: a.target.metadata, vault_ids: [] }
      : { type: 'existing_session', session_id: a.target.session_id, instructions: a.target.instructions };
  return {
    id: a.id,
    object: 'agent.automation',
    name: a.name,
    type: a.type,
    ...(a.type === 'periodic' ? { expression: a.expression, timezone: a.timezone } : { run_at: unixSeconds(a.runAt) }),
    status: a.status,
    pause_reason: a.pauseReason,
    target,
    created_at: unixSeconds(a.createdAt),
    created_by: { type: 'developer' },
    metadata: a.metadata,
    yuxi: { overlap: a.overlap, catch_up: a.catchUp, next_run_at: unixSeconds(a.nextRunAt) },
  };
}

export function invocationView(v: InvocationRecord): Record<string, unknown> {
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
    source: v.source === 'automation' ? { type: 'automation', automation: v.automationSnapshot } : { type: 'manual' },
    yuxi: { input_id: v.inputId, turn_id: v.turnId, reason: v.reason, fired_at: unixSeconds(v.firedAt) },
  };
}
