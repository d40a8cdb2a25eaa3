import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { newId, prepared } from '#libs/database';
import type { AutomationRecord } from '../automation.types.js';
import type { AutomationDto } from '../dto/automation-view.dto.js';
import { AUTOMATION_COLUMNS, automationFromRow } from '../tables/automation-rows.js';
import { snapshotOfView } from '../views/automation-view.js';

/** An automation as the scheduler reads it, with the database's clock at the read. */
export interface DueRead {
  automation: AutomationRecord;
  now: Date;
}

/** What the missed times' transaction does to the automation once they are recorded. */
export type AfterMissed = { nextRunAt: Date } | { end: 'completed' | 'paused' };

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
        await manager.query(prepared(`UPDATE automations SET status = $2, next_run_at = NULL, updated_at = now() WHERE id = $1`), [automationId, after.end]);
      }
      return recorded;
    });
  }

  /** Active automations whose time has come, the oldest first (the partial index automations_due_idx). */
  async dueIds(limit: number): Promise<string[]> {
    const rows: { id: string }[] = await this.dataSource.query(
      prepared(`SELECT a.id FROM automations a WHERE a.status = 'active' AND a.next_run_at <= now() ORDER BY a.next_run_at, a.id LIMIT $1`),
      [limit],
    );
    return rows.map((row) => row.id);
  }

  /** How many automations are active, and how many of them are due (their time passed, not fired yet). */
  async counts(): Promise<{ active: number; due: number }> {
    const rows: { active: string; due: string }[] = await this.dataSource.query(
      prepared(`SELECT count(*) AS active, count(*) FILTER (WHERE a.next_run_at <= now()) AS due FROM automations a WHERE a.status = 'active'`),
    );
    return { active: Number(rows[0]?.active ?? 0), due: Number(rows[0]?.due ?? 0) };
  }
}
