import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { AutomationRecord, AutomationStatus, AutomationTarget, CatchUpPolicy, OverlapPolicy, PauseReason } from '../automation.types.js';
import { AUTOMATION_COLUMNS, automationFromRow } from './automation-rows.js';

/** An automation to insert: all but the times the database stamps. */
export type NewAutomation = Omit<AutomationRecord, 'createdAt' | 'updatedAt'>;

/** The fields an update sets (absent: unchanged). `nextRunAt` is set whenever `schedule` is. */
export interface AutomationPatch {
  name?: string;
  schedule?: { expression: string | null; timezone: string | null; runAt: Date | null; nextRunAt: Date | null };
  target?: { target: AutomationTarget; targetSessionId: string | null; agentId: string | null };
  metadata?: Record<string, string>;
  overlap?: OverlapPolicy;
  catchUp?: CatchUpPolicy;
  /** A completed once automation given a future run_at is active again (with `schedule.nextRunAt`). */
  status?: 'active';
}

/**
 * Automations in SQL, owned like sessions: every read and write names the owner, and another
 * owner's automation is not found. Times are the database's (`now()`), never the process clock.
 */
@Injectable()
export class AutomationsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The database's clock: what "from now" means for next_run_at. */
  async now(manager?: EntityManager): Promise<Date> {
    const [row] = (await (manager ?? this.dataSource.manager).query(prepared('SELECT now() AS now'))) as { now: Date }[];
    return row!.now;
  }

  /**
   * Inserts the automation unless its account has `limit` already (409 automation_limit). The
   * account is the owner, or for an app's end user the app's owner: end users are as many as an app
   * names, so they share their app's limit. The account's advisory lock, held to commit, serialises
   * concurrent creates of one account, so the count and the insert cannot race past the limit.
   */
  async create(manager: EntityManager, automation: NewAutomation, account: { accountId: string; limit: number }): Promise<AutomationRecord> {
    const { accountId, limit } = account;
    await manager.query(prepared(`SELECT pg_advisory_xact_lock(hashtextextended('automations:' || $1::text, 0))`), [accountId]);
    const [counted] = (await manager.query(prepared('SELECT count(*)::int AS n FROM automations WHERE account_id = $1'), [accountId])) as { n: number }[];
    if ((counted?.n ?? 0) >= limit) {
      throw new DomainError('automation_limit', `This account has ${limit} automations (its app's end users together), the most allowed (AUTOMATION_MAX_PER_OWNER): delete one first`, { limit });
    }
    const a = automation;
    const [row] = (await manager.query(
      prepared(`INSERT INTO automations AS a (id, owner_id, account_id, principal, name, type, expression, timezone, run_at, target, target_session_id, agent_id, metadata,
         overlap, catch_up, status, pause_reason, next_run_at, created_at, updated_at)
       VALUES ($1, $2, $18, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, now(), now()) RETURNING ${AUTOMATION_COLUMNS}`),
      [a.id, a.ownerId, JSON.stringify(a.principal), a.name, a.type, a.expression, a.timezone, a.runAt, JSON.stringify(a.target), a.targetSessionId, a.agentId,
        JSON.stringify(a.metadata), a.overlap, a.catchUp, a.status, a.pauseReason, a.nextRunAt, accountId],
    )) as Record<string, unknown>[];
    return automationFromRow(row!);
  }

  /** The owner's automation (404 otherwise); with a manager, locked FOR UPDATE until commit. */
  async get(ownerId: string, id: string, manager?: EntityManager): Promise<AutomationRecord> {
    const lock = manager ? ' FOR UPDATE' : '';
    const rows = isUuid(id)
      ? ((await (manager ?? this.dataSource.manager).query(prepared(`SELECT ${AUTOMATION_COLUMNS} FROM automations a WHERE a.id = $1 AND a.owner_id = $2${lock}`), [id, ownerId])) as Record<string, unknown>[])
      : [];
    if (!rows[0]) throw DomainError.notFound(`Automation ${id}`);
    return automationFromRow(rows[0]);
  }

  /** The owner's automations by (created_at, id), cursor pages; `sessionId` narrows to an existing-session target. */
  async list(ownerId: string, page: PageQuery, sessionId?: string): Promise<Page<AutomationRecord>> {
    const values: unknown[] = [page.limit + 1, ownerId];
    let where = 'a.owner_id = $2';
    if (sessionId !== undefined) {
      // Not a session id: no automation targets it.
      if (!isUuid(sessionId)) return { rows: [], hasMore: false };
      values.push(sessionId);
      where += ` AND a.target_session_id = $${values.length}`;
    }
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? ((await this.dataSource.query(prepared('SELECT 1 FROM automations WHERE id = $1 AND owner_id = $2'), [page.after, ownerId])) as unknown[]) : [];
      if (anchor.length === 0) throw new DomainError('invalid_cursor', 'The `after` cursor is not an automation of this caller');
      values.push(page.after);
      where += ` AND (a.created_at, a.id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM automations WHERE id = $${values.length})`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(`SELECT ${AUTOMATION_COLUMNS} FROM automations a WHERE ${where} ORDER BY a.created_at ${direction}, a.id ${direction} LIMIT $1`, values)) as Record<string, unknown>[];
    return toPage(rows.map(automationFromRow), page.limit);
  }

  /** Applies the patch to the automation `get` locked in this transaction. */
  async update(manager: EntityManager, id: string, patch: AutomationPatch): Promise<AutomationRecord> {
    const s = patch.schedule;
    const t = patch.target;
    const result: unknown = await manager.query(
      prepared(`UPDATE automations a SET name = coalesce($2, a.name),
         expression = CASE WHEN $3::boolean THEN $4 ELSE a.expression END, timezone = CASE WHEN $3::boolean THEN $5 ELSE a.timezone END,
         run_at = CASE WHEN $3::boolean THEN $6::timestamptz ELSE a.run_at END, next_run_at = CASE WHEN $3::boolean THEN $7::timestamptz ELSE a.next_run_at END,
         target = coalesce($8::jsonb, a.target), target_session_id = CASE WHEN $8::jsonb IS NULL THEN a.target_session_id ELSE $9::uuid END,
         agent_id = CASE WHEN $8::jsonb IS NULL THEN a.agent_id ELSE $10 END, metadata = coalesce($11::jsonb, a.metadata),
         overlap = coalesce($12, a.overlap), catch_up = coalesce($13, a.catch_up), status = coalesce($14, a.status), updated_at = now()
       WHERE a.id = $1 RETURNING ${AUTOMATION_COLUMNS}`),
      [id, patch.name ?? null, s !== undefined, s?.expression ?? null, s?.timezone ?? null, s?.runAt ?? null, s?.nextRunAt ?? null,
        t ? JSON.stringify(t.target) : null, t?.targetSessionId ?? null, t?.agentId ?? null, patch.metadata ? JSON.stringify(patch.metadata) : null,
        patch.overlap ?? null, patch.catchUp ?? null, patch.status ?? null],
    );
    return automationFromRow(firstRow(result)!);
  }

  /** Sets the status (pause: next_run_at null; resume: the next time), clearing pause_reason. */
  async setStatus(manager: EntityManager, id: string, status: AutomationStatus, nextRunAt: Date | null, pauseReason: PauseReason | null = null): Promise<AutomationRecord> {
    const result: unknown = await manager.query(
      prepared(`UPDATE automations a SET status = $2, next_run_at = $3, pause_reason = $4, updated_at = now() WHERE a.id = $1 RETURNING ${AUTOMATION_COLUMNS}`),
      [id, status, nextRunAt, pauseReason],
    );
    return automationFromRow(firstRow(result)!);
  }

  /** Deletes the owner's automation and (cascade) its invocations; the target session stays. */
  async delete(ownerId: string, id: string): Promise<void> {
    if (!isUuid(id)) throw DomainError.notFound(`Automation ${id}`);
    const rows = (await this.dataSource.query(prepared('DELETE FROM automations WHERE id = $1 AND owner_id = $2 RETURNING id'), [id, ownerId])) as [unknown[], number];
    if (rows[1] !== 1) throw DomainError.notFound(`Automation ${id}`);
  }
}

function firstRow(result: unknown): Record<string, unknown> | undefined {
  // An UPDATE … RETURNING answers [rows, count] through TypeORM's query().
  if (Array.isArray(result) && Array.isArray(result[0])) return (result[0] as Record<string, unknown>[])[0];
  return Array.isArray(result) ? (result[0] as Record<string, unknown> | undefined) : undefined;
}
