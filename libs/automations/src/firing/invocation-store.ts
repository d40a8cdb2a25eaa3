import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import type { AutomationRecord, InvocationRecord, InvocationReason, InvocationSource, InvocationStatus, PauseReason, SkipReason } from '../automation.types.js';
import { AUTOMATION_COLUMNS, automationFromRow } from '../tables/automation-rows.js';
import type { PreviousInvocation } from './fire-decisions.js';

/** An invocation to record (the rest of its row is the fire's: ids, times). */
export interface NewInvocation {
  id: string;
  automation: AutomationRecord;
  source: InvocationSource;
  scheduledAt: Date | null;
  status: InvocationStatus;
  skipReason: SkipReason | null;
  reason: InvocationReason;
  error: { code: string; message: string } | null;
  sessionId: string | null;
  inputId: string | null;
  turnId: string | null;
  automationSnapshot: unknown;
  firedAt: Date | null;
  createdAt: Date;
}

/** The firing path's statements on `automations` and `automation_invocations`, each in the fire's transaction. */
@Injectable()
export class InvocationStore {
  /** The automation, row-locked until the fire commits (a concurrent fire of it waits, then sees what this one did); with whether its owner is suspended. */
  async lock(manager: EntityManager, automationId: string): Promise<{ automation: AutomationRecord; ownerSuspended: boolean } | null> {
    const [row] = (await manager.query(
      prepared(`SELECT ${AUTOMATION_COLUMNS},
         (SELECT u.suspended_at IS NOT NULL FROM users u WHERE u.id::text = a.principal->>'actorId') AS owner_suspended
       FROM automations a WHERE a.id = $1 FOR UPDATE OF a`),
      [automationId],
    )) as Record<string, unknown>[];
    return row ? { automation: automationFromRow(row), ownerSuspended: row.owner_suspended === true } : null;
  }

  /** The automation as it is (no lock), for the checks made before the fire's transaction. */
  async read(manager: EntityManager, automationId: string): Promise<AutomationRecord | null> {
    const [row] = (await manager.query(prepared(`SELECT ${AUTOMATION_COLUMNS} FROM automations a WHERE a.id = $1`), [automationId])) as Record<string, unknown>[];
    return row ? automationFromRow(row) : null;
  }

  /** The latest earlier invocation that accepted an input, with its input's and turn's state now (overlap). */
  async previous(manager: EntityManager, automationId: string): Promise<PreviousInvocation | null> {
    const [row] = (await manager.query(
      prepared(`SELECT i.session_id, i.status AS input_status, i.turn_id, t.status AS turn_status
       FROM automation_invocations v JOIN inputs i ON i.id = v.input_id LEFT JOIN turns t ON t.id = i.turn_id
       WHERE v.automation_id = $1 AND v.input_id IS NOT NULL
       ORDER BY v.created_at DESC, v.id DESC LIMIT 1`),
      [automationId],
    )) as { session_id: string; input_status: string; turn_id: string | null; turn_status: string | null }[];
    return row ? { sessionId: row.session_id, inputStatus: row.input_status, turnId: row.turn_id, turnStatus: row.turn_status } : null;
  }

  async insert(manager: EntityManager, v: NewInvocation): Promise<InvocationRecord> {
    await manager.query(
      prepared(`INSERT INTO automation_invocations (id, automation_id, owner_id, source, scheduled_at, status, skip_reason, reason, error, session_id, input_id, automation_snapshot, fired_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`),
      [
        v.id,
        v.automation.id,
        v.automation.ownerId,
        v.source,
        v.scheduledAt,
        v.status,
        v.skipReason,
        v.reason,
        v.error === null ? null : JSON.stringify(v.error),
        v.sessionId,
        v.inputId,
        v.automationSnapshot === null ? null : JSON.stringify(v.automationSnapshot),
        v.firedAt,
        v.createdAt,
      ],
    );
    return {
      id: v.id,
      automationId: v.automation.id,
      ownerId: v.automation.ownerId,
      source: v.source,
      scheduledAt: v.scheduledAt,
      status: v.status,
      skipReason: v.skipReason,
      reason: v.reason,
      error: v.error,
      sessionId: v.sessionId,
      inputId: v.inputId,
      turnId: v.turnId,
      automationSnapshot: v.automationSnapshot,
      firedAt: v.firedAt,
      createdAt: v.createdAt,
    };
  }

  /** A scheduled time recorded: the next one (null: a once automation completes). */
  async advance(manager: EntityManager, automationId: string, next: Date | null): Promise<void> {
    await manager.query(
      prepared(`UPDATE automations SET next_run_at = $2, status = CASE WHEN $2::timestamptz IS NULL THEN 'completed' ELSE status END, updated_at = now() WHERE id = $1`),
      [automationId, next],
    );
  }

  /** The service pauses the automation: its target is gone. */
  async pause(manager: EntityManager, automationId: string, reason: PauseReason): Promise<void> {
    await manager.query(prepared(`UPDATE automations SET status = 'paused', pause_reason = $2, next_run_at = NULL, updated_at = now() WHERE id = $1`), [automationId, reason]);
  }
}
