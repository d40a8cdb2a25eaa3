import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';

export interface Artifact {
  id: string;
  sessionId: string;
  environmentId: string;
  path: string;
  sha256: string;
  sizeBytes: number;
  turnId: string | null;
  createdAt: Date;
}

const COLUMNS = 'id, session_id, workdir_id, path, sha256, size_bytes, turn_id, created_at';

function fromRow(row: Record<string, unknown>): Artifact {
  return {
    id: String(row.id),
    sessionId: String(row.session_id),
    environmentId: String(row.workdir_id),
    path: String(row.path),
    sha256: String(row.sha256),
    sizeBytes: Number(row.size_bytes),
    turnId: (row.turn_id as string | null) ?? null,
    createdAt: row.created_at as Date,
  };
}

/**
 * A session's artifacts (`session_artifacts`): written in the transaction of the version that
 * holds them (WorkspacesRepository.commit), read and soft-deleted here. Ids are time-ordered, so
 * the list pages by id.
 */
@Injectable()
export class ArtifactsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async list(sessionId: string, page: PageQuery, environmentId?: string): Promise<Page<Artifact>> {
    if (environmentId !== undefined && !isUuid(environmentId)) return { rows: [], hasMore: false };
    const values: unknown[] = [sessionId, page.limit + 1, environmentId ?? null];
    let after = '';
    if (page.after !== undefined) {
      if (!(await this.get(sessionId, page.after))) throw new DomainError('invalid_cursor', 'The `after` cursor is not an artifact of this session');
      values.push(page.after);
      after = `AND id ${page.order === 'desc' ? '<' : '>'} $4`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(
      `SELECT ${COLUMNS} FROM session_artifacts WHERE session_id = $1 AND deleted_at IS NULL AND ($3::uuid IS NULL OR workdir_id = $3) ${after}
       ORDER BY id ${direction} LIMIT $2`,
      values,
    )) as Record<string, unknown>[];
    return toPage(rows.map(fromRow), page.limit);
  }

  /** A live artifact of the session, or null (another session's, deleted, or no such id). */
  async get(sessionId: string, artifactId: string): Promise<Artifact | null> {
    if (!isUuid(artifactId)) return null;
    const [row] = (await this.dataSource.query(prepared(`SELECT ${COLUMNS} FROM session_artifacts WHERE id = $1 AND session_id = $2 AND deleted_at IS NULL`), [
      artifactId,
      sessionId,
    ])) as Record<string, unknown>[];
    return row ? fromRow(row) : null;
  }

  /** Marks the artifact deleted (the workspace's file and the versions holding it stay); false when there was no live one. */
  async softDelete(sessionId: string, artifactId: string): Promise<boolean> {
    if (!isUuid(artifactId)) return false;
    const rows = (await this.dataSource.query(
      prepared(`UPDATE session_artifacts SET deleted_at = now() WHERE id = $1 AND session_id = $2 AND deleted_at IS NULL RETURNING id`),
      [artifactId, sessionId],
    )) as [unknown[], number] | unknown[];
    // TypeORM answers an UPDATE … RETURNING with [rows, count].
    const returned = Array.isArray(rows[0]) ? (rows[0] as unknown[]) : (rows as unknown[]);
    return returned.length === 1;
  }
}
