import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import type { AutomationRecord, InvocationRecord, PauseReason } from '../automation.types.js';
import { AUTOMATION_COLUMNS, automationFromRow } from '../tables/automation-rows.js';
import type { LivePrincipal, PreviousInvocation } from './fire-decisions.js';

/**
 * The creator as they are now, beside the automation's row: the role and suspension of the user
 * that acts (a role change or a suspension applies to the next fire, as to the next request), and
 * whether the key that created it still acts (not revoked, not expired; an app's end users act
 * through the app's key, so a deleted app key stops them too). A token user has no key.
 */
const LIVE = `u.role AS live_role, COALESCE(u.suspended_at IS NOT NULL, true) AS live_suspended,
  (a.principal->>'keyId' IS NULL OR EXISTS (SELECT 1 FROM api_keys k WHERE k.id::text = a.principal->>'keyId' AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now()))) AS key_live`;

function liveOf(row: Record<string, unknown>): LivePrincipal {
  return { role: (row.live_role as string | null) ?? null, suspended: row.live_suspended === true, keyLive: row.key_live === true };
}

/** An invocation to record: the record less what its row is given (owner and times) and its automation's id, with the automation itself. */
export type NewInvocation = Omit<InvocationRecord, 'automationId' | 'ownerId' | 'firedAt' | 'createdAt'> & {
  automation: AutomationRecord;
  /** Its input was accepted: fired_at is stamped (by the database's clock, as created_at is). */
  fired: boolean;
};

/** The firing path's statements on `automations` and `automation_invocations`, each in the fire's transaction. */
@Injectable()
export class InvocationStore {
  /**
   * The automation, row-locked until the fire commits (a concurrent fire of it waits, then sees
   * what this one did), with its creator as they are now (`LIVE` below).
   */
  async lock(manager: EntityManager, automationId: string): Promise<{ automation: AutomationRecord; live: LivePrincipal } | null> {
    const [row] = (await manager.query(prepared(`SELECT ${AUTOMATION_COLUMNS}, ${LIVE} FROM automations a LEFT JOIN users u ON u.id::text = a.principal->>'actorId' WHERE a.id = $1 FOR UPDATE OF a`), [automationId])) as Record<string, unknown>[];
    return row ? { automation: automationFromRow(row), live: liveOf(row) } : null;
  }

  /**
   * The automation as it is (no lock), for the checks made before the fire's transaction, with its
   * creator as they are now and the database's clock at the read (`readAt`: what committed before
   * it is what this fire may call "previous").
   */
  async read(manager: EntityManager, automationId: string): Promise<{ automation: AutomationRecord; live: LivePrincipal; readAt: Date } | null> {
    const [row] = (await manager.query(prepared(`SELECT ${AUTOMATION_COLUMNS}, ${LIVE}, clock_timestamp() AS read_at FROM automations a LEFT JOIN users u ON u.id::text = a.principal->>'actorId' WHERE a.id = $1`), [automationId])) as Record<string, unknown>[];
    return row ? { automation: automationFromRow(row), live: liveOf(row), readAt: row.read_at as Date } : null;
  }

  /**
   * The latest invocation that accepted an input, with its input's and turn's state now (overlap).
   * `before` (cancel_previous, outside the lock): only invocations created before this fire began
   * and, for a scheduled time, not of that time: a duplicate fire of a time (or a retry) never
   * takes the winner's invocation for the previous one and cancels its turn.
   */
  async previous(manager: EntityManager, automationId: string, before?: { at: Date; scheduledAt: Date | null }): Promise<PreviousInvocation | null> {
    const [row] = (await manager.query(
      prepared(`SELECT i.session_id, i.status AS input_status, i.turn_id, t.status AS turn_status
       FROM automation_invocations v JOIN inputs i ON i.id = v.input_id LEFT JOIN turns t ON t.id = i.turn_id
       WHERE v.automation_id = $1 AND v.input_id IS NOT NULL
         AND ($2::timestamptz IS NULL OR v.created_at < $2) AND ($3::timestamptz IS NULL OR v.scheduled_at IS DISTINCT FROM $3)
       ORDER BY v.created_at DESC, v.id DESC LIMIT 1`),
      [automationId, before?.at ?? null, before?.scheduledAt ?? null],
    )) as { session_id: string; input_status: string; turn_id: string | null; turn_status: string | null }[];
    return row ? { sessionId: row.session_id, inputStatus: row.input_status, turnId: row.turn_id, turnStatus: row.turn_status } : null;
  }

  /** The invocation inserted; its times are the database's (one clock for every host: the order of invocations and the fire lag). */
  async insert(manager: EntityManager, v: NewInvocation): Promise<InvocationRecord> {
    const [times] = (await manager.query(
      prepared(`INSERT INTO automation_invocations (id, automation_id, owner_id, source, scheduled_at, status, skip_reason, reason, error, session_id, input_id, automation_snapshot, fired_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, CASE WHEN $13::boolean THEN clock_timestamp() END, clock_timestamp())
       RETURNING fired_at, created_at`),
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
        v.fired,
      ],
    )) as { fired_at: Date | null; created_at: Date }[];
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
      firedAt: times.fired_at,
      createdAt: times.created_at,
    };
  }

  /** A scheduled time recorded: the next one (null: a once automation completes). */
  async advance(manager: EntityManager, automationId: string, next: Date | null): Promise<void> {
    await manager.query(
      prepared(`UPDATE automations SET next_run_at = $2, status = CASE WHEN $2::timestamptz IS NULL THEN 'completed' ELSE status END, updated_at = now() WHERE id = $1`),
      [automationId, next],
    );
  }

  /** The service pauses the automation: its target is gone (a completed once automation, run now, stays completed). */
  async pause(manager: EntityManager, automationId: string, reason: PauseReason): Promise<boolean> {
    const [, count] = (await manager.query(prepared(`UPDATE automations SET status = 'paused', pause_reason = $2, next_run_at = NULL, updated_at = now() WHERE id = $1 AND status <> 'completed'`), [automationId, reason])) as [unknown, number];
    return count === 1;
  }
}
