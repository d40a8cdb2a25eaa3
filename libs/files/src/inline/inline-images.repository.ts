import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, prepared } from '#libs/database';
import { FILE_COLUMNS, type FileEntity, fileFromRow } from '../file.entity.js';
import { isFileId } from '../file-ids.js';
import { FILE_MACHINE } from '../file-states.js';
import { checkImageQuota, type ImageQuota } from '../image-quota.js';

/** A file of the session its reader may open: an inline image or an attachment (alias f). */
const SESSION_READABLE_F = FILE_MACHINE.guard('f.status', 'inline', 'bound', 'ready');

/** One inline image about to be stored: its id and key are the server's, its type was sniffed from the bytes. */
export interface StagedImage {
  id: string;
  key: string;
  filename: string;
  bytes: number;
  mimeType: string;
  sha256: string;
}

/**
 * The `files` rows of inline images (origin `inline`), in SQL. They go `uploading` (staged: the row
 * before the blob, committed on its own) → `inline` (bound to its session and input in the accepting
 * transaction). A staging whose submission did not commit is tombstoned here, or — when its process
 * died — by the files sweep as an abandoned upload; either way the sweep removes its blob.
 */
@Injectable()
export class InlineImagesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Writes the rows of a submission's images, within the account's file quota and the session's
   * image cap (checkImageQuota: 413 when they would not fit, nothing written).
   */
  async stage(ownerId: string, images: StagedImage[], bound: { sessionId: string | null; quota: ImageQuota }): Promise<void> {
    if (images.length === 0) return;
    await this.dataSource.transaction(async (manager) => {
      await checkImageQuota(manager, ownerId, bound.sessionId, images.reduce((sum, image) => sum + image.bytes, 0), bound.quota);
      await this.insert(manager, ownerId, images);
    });
  }

  private async insert(manager: EntityManager, ownerId: string, images: StagedImage[]): Promise<void> {
    await manager.query(
      prepared(`INSERT INTO files (id, owner_id, filename, bytes, mime_type, sha256, status, origin, session_key)
       SELECT s.id, $1::uuid, s.filename, s.bytes, s.mime_type, s.sha256, 'uploading', 'inline', s.session_key
       FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[]) AS s(id, filename, bytes, mime_type, sha256, session_key)`),
      [
        ownerId,
        images.map((i) => i.id),
        images.map((i) => i.filename),
        images.map((i) => i.bytes),
        images.map((i) => i.mimeType),
        images.map((i) => i.sha256),
        images.map((i) => i.key),
      ],
    );
  }

  /** Binds staged images to the session and input (call in the accepting transaction); how many were bound. */
  async bind(manager: EntityManager, ownerId: string, fileIds: string[], sessionId: string, inputId: string): Promise<number> {
    if (fileIds.length === 0) return 0;
    const [, count] = (await manager.query(
      prepared(`UPDATE files SET status = 'inline', session_id = $3, input_id = $4, bound_at = now(), ready_at = now(),
         workdir_id = (SELECT workdir_id FROM sessions WHERE id = $3)
       WHERE id = ANY($1::text[]) AND owner_id = $2 AND origin = 'inline' AND status = 'uploading'`),
      [fileIds, ownerId, sessionId, inputId],
    )) as [unknown[], number];
    return count;
  }

  /** Staged images whose submission did not commit become tombstones; returns their storage keys. */
  async tombstoneStaged(fileIds: string[]): Promise<{ id: string; key: string }[]> {
    if (fileIds.length === 0) return [];
    const [rows] = (await this.dataSource.query(
      prepared(`UPDATE files SET status = 'deleting' WHERE id = ANY($1::text[]) AND origin = 'inline' AND status = 'uploading' RETURNING id, session_key`),
      [fileIds],
    )) as [{ id: string; session_key: string }[], number];
    return rows.map((row) => ({ id: row.id, key: row.session_key }));
  }

  /** Removes a tombstone whose blob is gone. */
  async deleteTombstone(id: string): Promise<void> {
    await this.dataSource.query(prepared(`DELETE FROM files WHERE id = $1 AND status = 'deleting'`), [id]);
  }

  /**
   * A file of the session whose bytes a client may ask for: an inline image, an attachment
   * (`bound` while the worker prepares it, `ready` once in the workdir), or an image a tool returned (`ready`). Visible as the session is: to its owner only (another caller, or another session's
   * file, finds nothing).
   * `sessionIds`: the session read through, then the other sessions whose files it shows (a fork's
   * ancestors: the caller names them). Those must have the same owner but may be deleted: only the
   * first must be live.
   */
  async readable(ownerId: string, sessionIds: readonly string[], fileId: string): Promise<FileEntity | null> {
    const [sessionId, ...others] = sessionIds;
    if (!isFileId(fileId) || sessionId === undefined || !sessionIds.every(isUuid)) return null;
    const rows = (await this.dataSource.query(
      others.length === 0
        ? prepared(`SELECT ${prefixed('f')} FROM files f JOIN sessions s ON s.id = f.session_id
       WHERE f.id = $1 AND f.session_id = $2 AND s.owner_id = $3 AND s.deleted_at IS NULL AND ${SESSION_READABLE_F}`)
        : prepared(`SELECT ${prefixed('f')} FROM files f JOIN sessions s ON s.id = f.session_id
       WHERE f.id = $1 AND f.session_id = ANY($4::uuid[]) AND s.owner_id = $3 AND ${SESSION_READABLE_F}
         AND EXISTS (SELECT 1 FROM sessions v WHERE v.id = $2 AND v.owner_id = $3 AND v.deleted_at IS NULL)`),
      others.length === 0 ? [fileId, sessionId, ownerId] : [fileId, sessionId, ownerId, sessionIds],
    )) as Record<string, unknown>[];
    return rows[0] ? fileFromRow(rows[0]) : null;
  }

  /**
   * The images among these ids of these sessions: inline images of their messages, and images
   * their tool results returned (the worker resolves the references of both with them, in one query).
   */
  async imagesOf(sessionIds: string[], fileIds: string[]): Promise<FileEntity[]> {
    const ids = fileIds.filter(isFileId);
    const sessions = sessionIds.filter(isUuid);
    if (ids.length === 0 || sessions.length === 0) return [];
    const rows = (await this.dataSource.query(
      prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE session_id = ANY($1::uuid[]) AND id = ANY($2::text[]) AND (status = 'inline' OR (origin = 'tool' AND status = 'ready'))`),
      [sessions, ids],
    )) as Record<string, unknown>[];
    return rows.map(fileFromRow);
  }
}

function prefixed(alias: string): string {
  return FILE_COLUMNS.split(', ')
    .map((column) => `${alias}.${column}`)
    .join(', ');
}
