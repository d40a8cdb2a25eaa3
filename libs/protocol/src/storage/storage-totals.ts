import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { assertViewer, type Principal } from '#libs/auth';
import { listEnvelope, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { ProjectsRepository, sessionOwnerOf } from '#libs/engine';
import type { Staging } from '../use-cases/acceptance.js';
import type { ProjectStorageDto, StorageTotalDto, StorageTotalListDto } from '../dto/storage-totals.dto.js';
import { ownerDto } from '../operator-session-queries.js';

export interface StorageTotalsFilter {
  by: 'owner' | 'project';
  ownerId?: string;
  projectId?: string;
}

const unix = (at: Date | null): number | null => (at === null ? null : Math.floor(at.getTime() / 1000));

/**
 * The reads over `storage_totals` (kept by StorageAccounting in the worker): operators' lists of
 * owners and projects, largest first, and an owner's own project total. Each reads the totals'
 * rows only (an index walk of the page), never the sessions or their rows.
 */
@Injectable()
export class StorageTotals {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly projects: ProjectsRepository,
    private readonly config: AppConfig,
  ) {}

  async list(principal: Principal, filter: StorageTotalsFilter, page: { after?: string; limit: number }): Promise<StorageTotalListDto> {
    assertViewer(principal);
    const params: unknown[] = [];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    const where = [filter.by === 'owner' ? `t.project_id = ''` : `t.project_id <> ''`];
    if (filter.ownerId !== undefined) where.push(`t.owner_id = ${param(filter.ownerId)}::uuid`);
    if (filter.projectId !== undefined) where.push(`t.project_id = ${param(filter.projectId)}`);
    if (page.after !== undefined) {
      const [ownerId, projectId] = filter.by === 'owner' ? [page.after, ''] : splitId(page.after);
      if (!/^[0-9a-f-]{36}$/i.test(ownerId) || (filter.by === 'project' && projectId === '')) throw new DomainError('invalid_cursor', `after ${page.after} is no total of this list`);
      const anchor = `(SELECT bytes, owner_id, project_id FROM storage_totals WHERE owner_id = ${param(ownerId)}::uuid AND project_id = ${param(projectId)})`;
      const [found] = (await this.dataSource.query(`SELECT 1 AS found FROM ${anchor} a`, params)) as unknown[];
      if (!found) throw new DomainError('invalid_cursor', `after ${page.after} is no total of this list`);
      // Largest first: the anchor's bytes (as summed now) and key; a total summed again between pages may move across the boundary.
      where.push(`(t.bytes, t.owner_id, t.project_id) < (SELECT bytes, owner_id, project_id FROM ${anchor} a)`);
    }
    const limit = param(page.limit + 1);
    const rows = (await this.dataSource.query(
      `SELECT t.owner_id, t.project_id, t.bytes, t.rows, t.sessions, t.measured_at, t.summed_at,
              u.kind, u.name, u.subject, u.external_id, u.app_id, p.name AS project_name
       FROM (SELECT * FROM storage_totals t WHERE ${where.join(' AND ')} ORDER BY t.bytes DESC, t.owner_id DESC, t.project_id DESC LIMIT ${limit}) t
       JOIN users u ON u.id = t.owner_id
       LEFT JOIN LATERAL (SELECT name FROM projects WHERE t.project_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                            AND id = CASE WHEN t.project_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN t.project_id::uuid END
                            AND deleted_at IS NULL) p ON true
       ORDER BY t.bytes DESC, t.owner_id DESC, t.project_id DESC`,
      params,
    )) as TotalRow[];
    const { rows: pageRows, hasMore } = toPage(rows, page.limit);
    return listEnvelope(pageRows.map((row) => this.toDto(row)), hasMore);
  }

  /** The caller's project's total (another owner's project, or a deleted one: 404); zeros before its first measurement. */
  async project(principal: Principal, projectId: string): Promise<ProjectStorageDto> {
    const project = await this.projects.getVisible(principal.userId, projectId);
    const [row] = (await this.dataSource.query(
      prepared(`SELECT bytes, rows, sessions, measured_at FROM storage_totals WHERE owner_id = $1 AND project_id = $2`),
      [principal.userId, project.id],
    )) as { bytes: string; rows: string; sessions: number; measured_at: Date | null }[];
    return { object: 'yuxi.project.storage', project_id: project.id, bytes: Number(row?.bytes ?? 0), rows: Number(row?.rows ?? 0), sessions: row?.sessions ?? 0, measured_at: unix(row?.measured_at ?? null) };
  }

  private toDto(row: TotalRow): StorageTotalDto {
    const owner = sessionOwnerOf({ id: row.owner_id, kind: row.kind, name: row.name, subject: row.subject, externalId: row.external_id, appId: row.app_id });
    const project = row.project_id === '' ? null : row.project_id;
    return {
      id: project === null ? row.owner_id : `${row.owner_id}/${project}`,
      object: 'yuxi.storage.total',
      owner_id: row.owner_id,
      owner: ownerDto(owner),
      project_id: project,
      project_name: row.project_name,
      bytes: Number(row.bytes),
      rows: Number(row.rows),
      sessions: row.sessions,
      measured_at: unix(row.measured_at),
      summed_at: unix(row.summed_at)!,
      quota_bytes: this.config.storageQuotaBytes > 0 ? this.config.storageQuotaBytes : null,
    };
  }
}

interface TotalRow {
  owner_id: string;
  project_id: string;
  bytes: string;
  rows: string;
  sessions: number;
  measured_at: Date | null;
  summed_at: Date;
  kind: 'user' | 'end_user';
  name: string;
  subject: string | null;
  external_id: string | null;
  app_id: string | null;
  project_name: string | null;
}

function splitId(id: string): [string, string] {
  const slash = id.indexOf('/');
  return slash < 0 ? [id, ''] : [id.slice(0, slash), id.slice(slash + 1)];
}

/**
 * STORAGE_QUOTA_BYTES, deployment-wide per owner: an owner whose measured total (storage_totals,
 * which lags by the accounting interval) is at or past it has new inputs refused at acceptance
 * (413 `storage_quota_exceeded`), after the idempotency key's receipt is read (a replay still
 * replays) and before anything is staged or written. Off (0): `on` is false and callers skip it, no
 * statement.
 */
@Injectable()
export class StorageQuota {
  readonly on: boolean;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
  ) {
    this.on = config.storageQuotaBytes > 0;
  }

  /** One primary-key read of the owner's total; throws when it is at or past the quota. */
  async admit(ownerId: string): Promise<void> {
    if (!this.on) return;
    const [row] = (await this.dataSource.query(prepared(`SELECT bytes FROM storage_totals WHERE owner_id = $1 AND project_id = ''`), [ownerId])) as { bytes: string }[];
    const used = Number(row?.bytes ?? 0);
    const quota = this.config.storageQuotaBytes;
    if (used >= quota) {
      throw new DomainError('storage_quota_exceeded', `This account stores ${used} bytes, at or past the storage quota of ${quota} bytes; delete sessions first`, { used_bytes: used, quota_bytes: quota });
    }
  }

  /** `staging` with the quota checked first: the acceptance runs it only when no receipt answers the key, before the transaction. */
  gate(ownerId: string, staging: Staging | undefined): Staging {
    let staged = false;
    return {
      stage: async () => {
        await this.admit(ownerId);
        staged = true;
        await staging?.stage();
      },
      discard: async () => {
        if (staged) await staging?.discard();
      },
    };
  }
}
