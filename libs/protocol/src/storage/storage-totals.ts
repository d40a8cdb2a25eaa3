import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { assertViewer, type Principal } from '#libs/auth';
import { isUuid, listEnvelope, prepared, toPage, unixSeconds } from '#libs/database';
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

/**
 * The reads over `storage_totals` (kept by the worker's StorageAccounting, libs/retention, through StorageUsageRepository): operators' lists of
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
    // An owner's total spans all its projects: a project filter there would only ever answer nothing.
    if (filter.by === 'owner' && filter.projectId !== undefined) {
      throw DomainError.validation([{ field: 'project_id', errors: ['project_id filters only with by=project'] }]);
    }
    const params: unknown[] = [];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    // The keyset: every key descending, as the list's partial index (storage_totals_owners_idx / _projects_idx) holds it: a page is an index walk, no sort.
    const keys = filter.by === 'owner' ? ['t.bytes', 't.owner_id'] : ['t.bytes', 't.owner_id', 't.project_id'];
    const where = [filter.by === 'owner' ? `t.project_id = ''` : `t.project_id <> ''`];
    if (filter.ownerId !== undefined) where.push(`t.owner_id = ${param(filter.ownerId)}::uuid`);
    if (filter.projectId !== undefined) where.push(`t.project_id = ${param(filter.projectId)}`);
    if (page.after !== undefined) {
      const anchor = await this.anchor(filter.by, page.after);
      // Largest first, after the anchor's bytes (as they are now) and key; a total that changed between pages may move across the boundary.
      // Only the keys this list has become parameters (an unused one would be a parameter Postgres cannot type).
      const values = [`${param(anchor.bytes)}::bigint`, `${param(anchor.ownerId)}::uuid`];
      if (keys.length > 2) values.push(`${param(anchor.projectId)}::varchar`);
      where.push(`(${keys.join(', ')}) < (${values.join(', ')})`);
    }
    const order = keys.map((key) => `${key} DESC`).join(', ');
    const rows = (await this.dataSource.query(
      `SELECT t.owner_id, t.project_id, t.bytes, t.rows, t.sessions, t.measured_at, t.summed_at,
              u.kind, u.name, u.subject, u.external_id, u.app_id
       FROM (SELECT * FROM storage_totals t WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${param(page.limit + 1)}) t
       JOIN users u ON u.id = t.owner_id
       ORDER BY ${order}`,
      params,
    )) as TotalRow[];
    const { rows: pageRows, hasMore } = toPage(rows, page.limit);
    const names = await this.projectNames(pageRows.map((row) => row.project_id));
    return listEnvelope(pageRows.map((row) => this.toDto(row, names.get(row.project_id) ?? null)), hasMore);
  }

  /** The cursor's total (`after`: an owner id, or `{owner_id}/{project_id}`); 400 `invalid_cursor` when it is none of this list. */
  private async anchor(by: StorageTotalsFilter['by'], after: string): Promise<{ bytes: string; ownerId: string; projectId: string }> {
    const [ownerId, projectId] = by === 'owner' ? [after, ''] : splitId(after);
    const invalid = new DomainError('invalid_cursor', `after ${after} is no total of this list`);
    if (!isUuid(ownerId) || (by === 'project' && projectId === '')) throw invalid;
    const [row] = (await this.dataSource.query(prepared(`SELECT bytes FROM storage_totals WHERE owner_id = $1 AND project_id = $2`), [ownerId, projectId])) as { bytes: string }[];
    if (!row) throw invalid;
    return { bytes: row.bytes, ownerId, projectId };
  }

  /** The live projects' names of a page (a label from before projects is no project id: no name). */
  private async projectNames(projectIds: string[]): Promise<Map<string, string>> {
    const ids = [...new Set(projectIds.filter((id) => isUuid(id)))];
    if (ids.length === 0) return new Map();
    const rows = (await this.dataSource.query(prepared(`SELECT id, name FROM projects WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL`), [ids])) as { id: string; name: string }[];
    return new Map(rows.map((row) => [row.id, row.name]));
  }

  /** The caller's project's total (another owner's project, or a deleted one: 404); zeros before its first measurement. */
  async project(principal: Principal, projectId: string): Promise<ProjectStorageDto> {
    const project = await this.projects.getVisible(principal.userId, projectId);
    const [row] = (await this.dataSource.query(
      prepared(`SELECT bytes, rows, sessions, measured_at FROM storage_totals WHERE owner_id = $1 AND project_id = $2`),
      [principal.userId, project.id],
    )) as { bytes: string; rows: string; sessions: number; measured_at: Date | null }[];
    return { object: 'yuxi.project.storage', project_id: project.id, bytes: Number(row?.bytes ?? 0), rows: Number(row?.rows ?? 0), sessions: row?.sessions ?? 0, measured_at: unixSeconds(row?.measured_at ?? null) };
  }

  private toDto(row: TotalRow, projectName: string | null): StorageTotalDto {
    const owner = sessionOwnerOf({ id: row.owner_id, kind: row.kind, name: row.name, subject: row.subject, externalId: row.external_id, appId: row.app_id });
    const project = row.project_id === '' ? null : row.project_id;
    return {
      id: project === null ? row.owner_id : `${row.owner_id}/${project}`,
      object: 'yuxi.storage.total',
      owner_id: row.owner_id,
      owner: ownerDto(owner),
      project_id: project,
      project_name: projectName,
      bytes: Number(row.bytes),
      rows: Number(row.rows),
      sessions: row.sessions,
      measured_at: unixSeconds(row.measured_at),
      summed_at: unixSeconds(row.summed_at),
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
}

function splitId(id: string): [string, string] {
  const slash = id.indexOf('/');
  return slash < 0 ? [id, ''] : [id.slice(0, slash), id.slice(slash + 1)];
}

/**
 * STORAGE_QUOTA_BYTES, deployment-wide per owner: an owner whose measured total (storage_totals:
 * its live sessions; it lags by the accounting interval, and a deleted session leaves it at the next
 * pass) is at or past it has new inputs refused at acceptance
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
      // What frees it, and when: deleted sessions leave the total at the accounting's next pass (not at their purge).
      const accountingIntervalS = Math.ceil(this.config.retentionSweepMs / 1000);
      throw new DomainError(
        'storage_quota_exceeded',
        `This account's sessions store ${used} bytes as last measured, at or past the storage quota of ${quota} bytes; delete sessions to free it: a deleted session stops counting at the storage accounting's next pass (every ${accountingIntervalS} s)`,
        { used_bytes: used, quota_bytes: quota, accounting_interval_s: accountingIntervalS },
      );
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
