import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import type { StagedImage } from '../inline/inline-images.repository.js';
import { checkImageQuota, type ImageQuota } from '../image-quota.js';

/** One image of a tool result about to be stored: staged like an inline image (its id and key are the server's, its type sniffed). */
export type StagedToolImage = StagedImage;

/**
 * The `files` rows of images tool results returned (origin `tool`), in SQL. They go `uploading`
 * (staged: the row before the blob, committed on its own) → `ready` (in the session's workdir,
 * bound in the transaction that records the tool's result). A staging whose result was not
 * recorded is tombstoned here, or — when its process died — by the files sweep as an abandoned
 * upload; either way the sweep removes its blob. The owner is the session's.
 */
@Injectable()
export class ToolImagesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Writes the rows of a result's images, within the session owner's file quota and the session's
   * image cap (checkImageQuota: a DomainError when they would not fit, nothing written).
   */
  async stage(sessionId: string, images: StagedToolImage[], quota: ImageQuota): Promise<void> {
    if (images.length === 0) return;
    await this.dataSource.transaction(async (manager) => {
      const [session] = (await manager.query(prepared(`SELECT owner_id FROM sessions WHERE id = $1`), [sessionId])) as { owner_id: string }[];
      if (session) await checkImageQuota(manager, session.owner_id, sessionId, images.reduce((sum, image) => sum + image.bytes, 0), quota);
      await this.insert(manager, sessionId, images);
    });
  }

  private async insert(manager: EntityManager, sessionId: string, images: StagedToolImage[]): Promise<void> {
    await manager.query(
      prepared(`INSERT INTO files (id, owner_id, filename, bytes, mime_type, sha256, status, origin, session_key)
       SELECT i.id, s.owner_id, i.filename, i.bytes, i.mime_type, i.sha256, 'uploading', 'tool', i.session_key
       FROM sessions s, unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[]) AS i(id, filename, bytes, mime_type, sha256, session_key)
       WHERE s.id = $1`),
      [
        sessionId,
        images.map((i) => i.id),
        images.map((i) => i.filename),
        images.map((i) => i.bytes),
        images.map((i) => i.mimeType),
        images.map((i) => i.sha256),
        images.map((i) => i.key),
      ],
    );
  }

  /**
   * Puts staged images in the session's workdir (call in the transaction that records the result);
   * returns the ids bound, in the order given. One the sweep took away meanwhile is left out.
   */
  async bind(manager: EntityManager, sessionId: string, fileIds: string[]): Promise<string[]> {
    if (fileIds.length === 0) return [];
    const [rows] = (await manager.query(
      prepared(`UPDATE files SET status = 'ready', session_id = $2, bound_at = now(), ready_at = now(),
         workdir_id = (SELECT workdir_id FROM sessions WHERE id = $2)
       WHERE id = ANY($1::text[]) AND origin = 'tool' AND status = 'uploading' RETURNING id`),
      [fileIds, sessionId],
    )) as [{ id: string }[], number];
    const bound = new Set(rows.map((row) => row.id.trim()));
    return fileIds.filter((id) => bound.has(id));
  }

  /** Staged images whose result was not recorded become tombstones; returns their storage keys. */
  async tombstoneStaged(fileIds: string[]): Promise<{ id: string; key: string }[]> {
    if (fileIds.length === 0) return [];
    const [rows] = (await this.dataSource.query(
      prepared(`UPDATE files SET status = 'deleting' WHERE id = ANY($1::text[]) AND origin = 'tool' AND status = 'uploading' RETURNING id, session_key`),
      [fileIds],
    )) as [{ id: string; session_key: string }[], number];
    return rows.map((row) => ({ id: row.id.trim(), key: row.session_key }));
  }

  /** Removes a tombstone whose blob is gone. */
  async deleteTombstone(id: string): Promise<void> {
    await this.dataSource.query(prepared(`DELETE FROM files WHERE id = $1 AND status = 'deleting'`), [id]);
  }
}
