import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, newId, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { SessionTtl } from '#libs/agents';
import { PROJECT_COLUMNS, type ProjectEntity, projectFromRow } from './project.entity.js';

export interface NewProject {
  ownerId: string;
  name: string;
  description: string;
  /** The TTL of its sessions (checked by the caller); null: none. */
  ttl?: SessionTtl | null;
}

/**
 * The `projects` table, in SQL. Projects are visible as sessions are: to their owner only; a
 * missing, another owner's or a deleted project is not found. Deleting is soft: the row stays,
 * so its sessions keep their workdir (preparations under way finish), but it takes no new sessions
 * and its sessions no new messages.
 */
@Injectable()
export class ProjectsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async create(project: NewProject): Promise<ProjectEntity> {
    const [row] = (await this.dataSource.query(
      prepared(`INSERT INTO projects (id, owner_id, name, description, ttl) VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING ${PROJECT_COLUMNS}`),
      [newId(), project.ownerId, project.name, project.description, project.ttl ? JSON.stringify(project.ttl) : null],
    )) as Record<string, unknown>[];
    return projectFromRow(row!);
  }

  /** A live project of the owner; `manager` given: share-locked until its transaction ends (a concurrent delete waits for it, and it for the delete). */
  async getVisible(ownerId: string, projectId: string, manager?: EntityManager): Promise<ProjectEntity> {
    const rows = isUuid(projectId)
      ? ((await (manager ?? this.dataSource.manager).query(
          prepared(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL${manager ? ' FOR SHARE' : ''}`),
          [projectId, ownerId],
        )) as Record<string, unknown>[])
      : [];
    if (!rows[0]) throw DomainError.notFound(`Project ${projectId}`);
    return projectFromRow(rows[0]);
  }

  /** The owner's live projects in (created_at, id) order; `after` must be one of them. */
  async list(ownerId: string, page: PageQuery): Promise<Page<ProjectEntity>> {
    const values: unknown[] = [ownerId, page.limit + 1];
    let after = '';
    if (page.after !== undefined) {
      const anchor = isUuid(page.after)
        ? ((await this.dataSource.query(prepared(`SELECT 1 FROM projects WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL`), [page.after, ownerId])) as unknown[])
        : [];
      if (anchor.length === 0) throw new DomainError('invalid_cursor', 'The `after` cursor is not a project of this caller');
      values.push(page.after);
      // The anchor's time is compared in SQL: a JS Date would drop its microseconds.
      after = `AND (created_at, id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM projects WHERE id = $3)`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(
      `SELECT ${PROJECT_COLUMNS} FROM projects WHERE owner_id = $1 AND deleted_at IS NULL ${after}
       ORDER BY created_at ${direction}, id ${direction} LIMIT $2`,
      values,
    )) as Record<string, unknown>[];
    return toPage(rows.map(projectFromRow), page.limit);
  }

  /** Marks a live project of the owner deleted; not found otherwise (a second delete included). */
  async softDelete(ownerId: string, projectId: string): Promise<void> {
    if (!isUuid(projectId)) throw DomainError.notFound(`Project ${projectId}`);
    const [, count] = (await this.dataSource.query(
      prepared(`UPDATE projects SET deleted_at = now(), updated_at = now() WHERE id = $1 AND owner_id = $2 AND deleted_at IS NULL`),
      [projectId, ownerId],
    )) as [unknown[], number];
    if (count !== 1) throw DomainError.notFound(`Project ${projectId}`);
  }

  /**
   * A session's `project_id` still takes new sessions: a project of the owner that is live
   * (share-locked until the transaction ends, as getVisible with a manager), or a free label from
   * before projects existed (no project row: nothing to check). A deleted project: not found.
   */
  async requireLiveOrLabel(manager: EntityManager, ownerId: string, projectId: string): Promise<void> {
    if (!isUuid(projectId)) return;
    const rows = (await manager.query(prepared(`SELECT owner_id, deleted_at FROM projects WHERE id = $1 FOR SHARE`), [projectId])) as { owner_id: string; deleted_at: Date | null }[];
    if (rows[0] && (rows[0].owner_id !== ownerId || rows[0].deleted_at !== null)) throw DomainError.notFound(`Project ${projectId}`);
  }

  /** The session TTL of a project (deleted or not: its sessions keep the bounds it gave them); null: none, or no such project (a free label). */
  async ttlOf(manager: EntityManager, projectId: string): Promise<SessionTtl | null> {
    if (!isUuid(projectId)) return null;
    const rows = (await manager.query(prepared(`SELECT ttl FROM projects WHERE id = $1`), [projectId])) as { ttl: SessionTtl | null }[];
    return rows[0]?.ttl ?? null;
  }

  /**
   * Whether a session's `project_id` names a deleted project. By the project, not the workdir: a
   * project session's fork with an environment has a workdir of its own. Older sessions may hold a
   * free label there, which names no project.
   */
  async isDeletedProject(manager: EntityManager, projectId: string): Promise<boolean> {
    if (!isUuid(projectId)) return false;
    const rows = (await manager.query(prepared(`SELECT 1 FROM projects WHERE id = $1 AND deleted_at IS NOT NULL`), [projectId])) as unknown[];
    return rows.length > 0;
  }
}
