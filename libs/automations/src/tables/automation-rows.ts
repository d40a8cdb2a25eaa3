import type { AutomationRecord, InvocationRecord } from '../automation.types.js';

/** The columns every read of `automations` selects (alias `a`), in the shape `automationFromRow` maps. */
export const AUTOMATION_COLUMNS =
  'a.id, a.owner_id, a.principal, a.name, a.type, a.expression, a.timezone, a.run_at, a.target, a.target_session_id, a.agent_id, a.metadata, a.overlap, a.catch_up, a.status, a.pause_reason, a.next_run_at, a.created_at, a.updated_at';

export function automationFromRow(row: Record<string, unknown>): AutomationRecord {
  return {
    id: row.id as string,
    ownerId: row.owner_id as string,
    principal: row.principal as AutomationRecord['principal'],
    name: row.name as string,
    type: row.type as AutomationRecord['type'],
    expression: (row.expression as string | null) ?? null,
    timezone: (row.timezone as string | null) ?? null,
    runAt: (row.run_at as Date | null) ?? null,
    target: row.target as AutomationRecord['target'],
    targetSessionId: (row.target_session_id as string | null) ?? null,
    agentId: (row.agent_id as string | null) ?? null,
    metadata: (row.metadata as Record<string, string>) ?? {},
    overlap: row.overlap as AutomationRecord['overlap'],
    catchUp: row.catch_up as AutomationRecord['catchUp'],
    status: row.status as AutomationRecord['status'],
    pauseReason: (row.pause_reason as AutomationRecord['pauseReason']) ?? null,
    nextRunAt: (row.next_run_at as Date | null) ?? null,
    createdAt: row.created_at as Date,
    updatedAt: row.updated_at as Date,
  };
}

/**
 * The columns every read of `automation_invocations` selects (alias `v`), with the turn its input
 * became (`turn_id`, through a `LEFT JOIN inputs i ON i.id = v.input_id`).
 */
export const INVOCATION_COLUMNS =
  'v.id, v.automation_id, v.owner_id, v.source, v.scheduled_at, v.status, v.skip_reason, v.reason, v.error, v.session_id, v.input_id, i.turn_id, v.automation_snapshot, v.fired_at, v.created_at';

export function invocationFromRow(row: Record<string, unknown>): InvocationRecord {
  return {
    id: row.id as string,
    automationId: row.automation_id as string,
    ownerId: row.owner_id as string,
    source: row.source as InvocationRecord['source'],
    scheduledAt: (row.scheduled_at as Date | null) ?? null,
    status: row.status as InvocationRecord['status'],
    skipReason: (row.skip_reason as InvocationRecord['skipReason']) ?? null,
    reason: row.reason as InvocationRecord['reason'],
    error: (row.error as InvocationRecord['error']) ?? null,
    sessionId: (row.session_id as string | null) ?? null,
    inputId: (row.input_id as string | null) ?? null,
    turnId: (row.turn_id as string | null) ?? null,
    automationSnapshot: row.automation_snapshot ?? null,
    firedAt: (row.fired_at as Date | null) ?? null,
    createdAt: row.created_at as Date,
  };
}
