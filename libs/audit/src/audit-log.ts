import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, newId, type PageQuery, prepared, toPage, unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { AuditEntryDto, AuditListDto } from './audit.dto.js';

/** Every action the trail records (the audit entry's `action`). */
export const AUDIT_ACTIONS = ['api_key.created', 'api_key.revoked', 'agent.created', 'agent.replaced', 'agent.deleted', 'user.role_changed', 'user.suspended', 'user.reactivated', 'session.operator_event', 'session.cancel_requested', 'session.model_requests_read', 'secret.created', 'secret.replaced', 'secret.deleted', 'webhook_endpoint.secret_rotated', 'webhook_endpoint.disabled', 'webhook_endpoint.recovered', 'model_price.set', 'model_price.deleted'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
/** What an entry's action was done to (the entry's `target.type`). */
export const AUDIT_TARGET_TYPES = ['api_key', 'agent', 'user', 'session', 'secret', 'webhook_endpoint', 'model_price'] as const;

export interface AuditEntry {
  actorId: string | null;
  keyId: string | null;
  action: AuditAction;
  targetType: (typeof AUDIT_TARGET_TYPES)[number];
  targetId: string;
  /** Never a secret: names, access levels, versions. */
  details?: Record<string, unknown>;
}

interface AuditRow {
  id: string;
  actor_id: string | null;
  key_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  details: Record<string, unknown>;
  created_at: Date;
}

/** The trail of administrative actions, written in the transaction of the action itself (no action without its entry). */
@Injectable()
export class AuditLog {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async record(manager: EntityManager, entry: AuditEntry): Promise<void> {
    await manager.query(
      prepared(`INSERT INTO audit_log (id, actor_id, key_id, action, target_type, target_id, details, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, clock_timestamp())`),
      [newId(), entry.actorId, entry.keyId, entry.action, entry.targetType, entry.targetId, JSON.stringify(entry.details ?? {})],
    );
  }

  async list(page: PageQuery): Promise<AuditListDto> {
    const params: unknown[] = [page.limit + 1];
    let where = '';
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? ((await this.dataSource.query(prepared(`SELECT 1 FROM audit_log WHERE id = $1`), [page.after])) as unknown[])[0] : undefined;
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not an audit entry');
      params.push(page.after);
      // Compared in SQL: the anchor's microseconds would not survive a round trip through a JS Date.
      where = `WHERE (created_at, id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM audit_log WHERE id = $2)`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(
      `SELECT id, actor_id, key_id, action, target_type, target_id, details, created_at FROM audit_log ${where} ORDER BY created_at ${direction}, id ${direction} LIMIT $1`,
      params,
    )) as AuditRow[];
    const { rows: data, hasMore } = toPage(rows.map(toDto), page.limit);
    return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
  }
}

function toDto(row: AuditRow): AuditEntryDto {
  return {
    id: row.id,
    object: 'audit_entry',
    action: row.action,
    actor_id: row.actor_id,
    key_id: row.key_id,
    target: { type: row.target_type, id: row.target_id },
    details: row.details,
    created_at: unixSeconds(row.created_at),
  };
}
