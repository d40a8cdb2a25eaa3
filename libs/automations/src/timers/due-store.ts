import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { newId, prepared } from '#libs/database';
import { AUTOMATION_MACHINE } from '../automation-states.js';
import type { AutomationRecord } from '../automation.types.js';
import type { AutomationDto } from '../dto/automation-view.dto.js';
import { AUTOMATION_COLUMNS, automationFromRow } from '../tables/automation-rows.js';
import { snapshotOfView } from '../views/automation-view.js';

/** An automation as the scheduler reads it, with the database's clock at the read. */
export interface DueRead {
  automation: AutomationRecord;
  now: Date;
}

/** What the missed times' transaction does to the automation once they are recorded (a once automation whose only time was missed completes). */
export type AfterMissed = { nextRunAt: Date } | { end: 'completed' };

/**
 * The timers' and the sweep's side of the automations tables, in SQL. The clock is always the
 * database's (`now()`): every worker and the api agree on it, whatever their own clocks say.
 */
@Injectable()
export class DueStore {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async read(automationId: string): Promise<DueRead | null> {
    const rows: Record<string, unknown>[] = await this.dataSource.query(prepared(`SELECT ${AUTOMATION_COLUMNS}, now() AS db_now FROM automations a WHERE a.id = $1`), [automationId]);
    const row = rows[0];
    return row ? { automation: automationFromRow(row), now: row.db_now as Date } : null;
  }

  /**
   * Records `missed` as skipped invocations (skip_reason and reason `missed`) and moves next_run_at
   * on, in one transaction guarded on next_run_at still being `expected` under the automation's row
   * lock: null when another worker (or a pause, an update) got there first, and nothing was written;
   * else how many missed times it recorded.
   * A time already recorded is left as it is (the unique key on automation and time). `snapshot`:
   * the automation's public view, which each invocation shows as its source.
   */
  async recordMissed(automationId: string, expected: Date, missed: Date[], after: AfterMissed, snapshot: unknown): Promise<number | null> {
    return this.dataSource.transaction(async (manager) => {
      const locked: Record<string, unknown>[] = await manager.query(
        prepared(`SELECT a.owner_id FROM automations a WHERE a.id = $1 AND a.status = 'active' AND a.next_run_at = $2 FOR UPDATE`),
        [automationId, expected],
      );
      const ownerId = locked[0]?.owner_id as string | undefined;
      if (!ownerId) return null;
      let recorded = 0;
      if (missed.length > 0) {
        const rows: unknown[] = await manager.query(
          prepared(`INSERT INTO automation_invocations (id, automation_id, owner_id, source, scheduled_at, status, skip_reason, reason, automation_snapshot, created_at)
           SELECT t.id, $1, $2, 'automation', t.at, 'skipped', 'missed', 'missed', $5::jsonb, now() FROM unnest($3::uuid[], $4::timestamptz[]) AS t(id, at)
           ON CONFLICT (automation_id, scheduled_at) DO NOTHING RETURNING id`),
          [automationId, ownerId, missed.map(() => newId()), missed, JSON.stringify(snapshotOfView(snapshot as AutomationDto))],
        );
        recorded = rows.length;
      }
      if ('nextRunAt' in after) {
        await manager.query(prepared(`UPDATE automations SET next_run_at = $2, updated_at = now() WHERE id = $1`), [automationId, after.nextRunAt]);
      } else {
        await manager.query(prepared(`UPDATE automations SET status = 'completed', next_run_at = NULL, updated_at = now() WHERE id = $1 AND ${AUTOMATION_MACHINE.from('missedOnce')}`), [automationId]);
      }
      return recorded;
    });
  }

  /**
   * One sweep's read, in one statement: how many automations are active and how many of them are
   * due (the gauges), and the ids of at most `limit` due ones, the oldest first (the partial index
   * automations_due_idx), overdue by `lagMs` at least (a time whose timer is firing right now is the
   * timer's), leaving out `skip` (ids whose runs keep failing: the sweep backs off them).
   */
  async sweepRead(limit: number, lagMs: number, skip: readonly string[]): Promise<{ active: number; due: number; ids: string[] }> {
    const rows: { active: string; due: string; ids: string[] }[] = await this.dataSource.query(
      prepared(`SELECT count(*) AS active, count(*) FILTER (WHERE a.next_run_at <= now()) AS due,
         ARRAY(SELECT d.id FROM automations d WHERE d.status = 'active' AND d.next_run_at <= now() - $2 * interval '1 millisecond'
           AND d.id <> ALL($3::uuid[]) ORDER BY d.next_run_at, d.id LIMIT $1)::text[] AS ids
       FROM automations a WHERE a.status = 'active'`),
      [limit, lagMs, skip],
    );
    const row = rows[0];
    return { active: Number(row?.active ?? 0), due: Number(row?.due ?? 0), ids: row?.ids ?? [] };
  }

  /**
   * Invocation retention: of the `automations` automations with the ids after `after` (in id
   * order), deletes the invocations older than the newest `kept` of each, at most `batch` rows in
   * all, the oldest first. Returns the last automation id looked at (null when none was left after
   * `after`: the next round starts over) and how many rows went.
   */
  async pruneInvocations(after: string, automations: number, kept: number, batch: number): Promise<{ last: string | null; deleted: number }> {
    const rows: { last: string | null; deleted: string }[] = await this.dataSource.query(
      prepared(`WITH picked AS (SELECT a.id FROM automations a WHERE a.id > $1 ORDER BY a.id LIMIT $2),
         kept AS (SELECT p.id AS automation_id, k.created_at, k.id FROM picked p CROSS JOIN LATERAL (SELECT i.created_at, i.id FROM automation_invocations i
           WHERE i.automation_id = p.id ORDER BY i.created_at DESC, i.id DESC OFFSET ($3::int - 1) LIMIT 1) k),
         doomed AS (SELECT x.id FROM kept e CROSS JOIN LATERAL (SELECT i.id, i.created_at FROM automation_invocations i
           WHERE i.automation_id = e.automation_id AND (i.created_at, i.id) < (e.created_at, e.id) ORDER BY i.created_at, i.id LIMIT $4) x ORDER BY x.created_at LIMIT $4),
         gone AS (DELETE FROM automation_invocations g USING doomed WHERE g.id = doomed.id RETURNING 1)
       SELECT (SELECT max(p.id::text) FROM picked p) AS last, (SELECT count(*) FROM gone) AS deleted`),
      [after, automations, kept, batch],
    );
    return { last: rows[0]?.last ?? null, deleted: Number(rows[0]?.deleted ?? 0) };
  }
}
