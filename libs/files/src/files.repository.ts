import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { type Page, type PageQuery, prepared, type StorageQueryable, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { FILE_COLUMNS, type FileEntity, fileFromRow } from './file.entity.js';
import { ATTACHED, FILE_MACHINE } from './file-states.js';
import { isFileId, storageKeys } from './file-ids.js';

export interface NewUpload {
  id: string;
  ownerId: string;
  /**
   * Whose storage quota the upload counts against: the product user behind the call. An app's end
   * users own their files, but their bytes add up on the account of the key's owner, so a new
   * X-End-User-Id never brings fresh storage.
   */
  accountId: string;
  filename: string;
  bytes: number;
  mimeType: string;
  sha256: string;
}

export interface Quota {
  bytes: number;
  drafts: number;
}

/** What a tombstoned or cleaned-up file still holds in storage. */
export interface Blobs {
  id: string;
  keys: string[];
}

/** Files a session holds: attachments (bound, ready), inline images and tools' images (`inline`, `ready`). */
const HELD = FILE_MACHINE.guard('status', 'bound', 'ready', 'inline');
/** An upload in progress longer than this is abandoned (its process died between row and blob). */
const ABANDONED_UPLOAD_S = 15 * 60;

/**
 * The `files` table, in SQL. Times come from the database clock. Rows move through the states of
 * FileStatus with conditional UPDATEs, so concurrent requests (a bind racing a delete or the
 * expiry sweep) serialise on the row and exactly one wins.
 */
@Injectable()
export class FilesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * Reserves an upload within the quotas: bytes per account (the product user and its apps' end
   * users, so a new end-user id brings no fresh storage), waiting drafts per owner. The row
   * (`uploading`) is written before the blob. Uploads of one account serialise on an advisory
   * lock, so two concurrent ones cannot both pass the check. Every stored file counts: uploads,
   * inline images of messages and images tools returned (those are checked alike, see image-quota).
   */
  async reserveUpload(upload: NewUpload, ttlS: number, quota: Quota): Promise<void> {
    await this.dataSource.transaction(async (manager) => {
      await manager.query(prepared(`SELECT pg_advisory_xact_lock(hashtextextended('files:' || $1::text, 0))`), [upload.accountId]);
      const [usage] = (await manager.query(
        prepared(`SELECT coalesce(sum(bytes), 0)::bigint AS bytes, count(*) FILTER (WHERE owner_id = $2 AND status IN ('uploading', 'draft'))::int AS drafts
         FROM files WHERE owner_id IN (SELECT id FROM users WHERE id = $1 OR (parent_id = $1 AND kind = 'end_user'))
           AND status <> 'deleting' AND NOT (status = 'draft' AND expires_at <= now())`),
        [upload.accountId, upload.ownerId],
      )) as { bytes: string; drafts: number }[];
      const usedBytes = Number(usage?.bytes ?? 0);
      const drafts = usage?.drafts ?? 0;
      if (usedBytes + upload.bytes > quota.bytes || drafts + 1 > quota.drafts) {
        throw new DomainError('file_quota_exceeded', usedBytes + upload.bytes > quota.bytes ? 'The stored files of this account would exceed its storage quota' : 'You have too many drafts waiting to be attached', {
          used_bytes: usedBytes,
          quota_bytes: quota.bytes,
          drafts,
          quota_drafts: quota.drafts,
        });
      }
      await manager.query(
        prepared(`INSERT INTO files (id, owner_id, filename, bytes, mime_type, sha256, status, draft_key, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'uploading', $7, now() + $8::int * interval '1 second')`),
        [upload.id, upload.ownerId, upload.filename, upload.bytes, upload.mimeType, upload.sha256, storageKeys.draft(upload.id), ttlS],
      );
    });
  }

  /** The blob is stored: the upload becomes a draft. */
  async completeUpload(id: string, manager?: EntityManager): Promise<FileEntity | null> {
    const [rows] = (await (manager ?? this.dataSource.manager).query(prepared(`UPDATE files SET status = 'draft' WHERE id = $1 AND status = 'uploading' RETURNING ${FILE_COLUMNS}`), [id])) as [
      Record<string, unknown>[],
      number,
    ];
    return rows[0] ? fileFromRow(rows[0]) : null;
  }

  /** The blob could not be stored: the reservation becomes a tombstone for the sweep. */
  async abandonUpload(id: string): Promise<void> {
    await this.dataSource.query(prepared(`UPDATE files SET status = 'deleting' WHERE id = $1 AND status = 'uploading'`), [id]);
  }

  /** A file of this owner that exists for clients (neither in upload nor being deleted); an expired draft counts as gone. `manager`: within a transaction. */
  async findOwned(ownerId: string, id: string, manager?: EntityManager): Promise<FileEntity | null> {
    if (!isFileId(id)) return null;
    const rows = (await (manager ?? this.dataSource).query(
      prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE id = $1 AND owner_id = $2
         AND status IN ('draft', 'bound', 'ready') AND NOT (status = 'draft' AND expires_at <= now())`),
      [id, ownerId],
    )) as Record<string, unknown>[];
    return rows[0] ? fileFromRow(rows[0]) : null;
  }

  /** Deletes a live draft of this owner (a tombstone first; the caller removes the blob, then the row). Null when it is no draft. */
  async tombstoneDraft(ownerId: string, id: string): Promise<FileEntity | null> {
    if (!isFileId(id)) return null;
    const [rows] = (await this.dataSource.query(
      prepared(`UPDATE files SET status = 'deleting' WHERE id = $1 AND owner_id = $2 AND status = 'draft' AND expires_at > now() RETURNING ${FILE_COLUMNS}`),
      [id, ownerId],
    )) as [Record<string, unknown>[], number];
    return rows[0] ? fileFromRow(rows[0]) : null;
  }

  /** Removes a tombstone whose blobs are gone. */
  async deleteTombstone(id: string): Promise<void> {
    await this.dataSource.query(prepared(`DELETE FROM files WHERE id = $1 AND status = 'deleting'`), [id]);
  }

  /**
   * Attaches the owner's live drafts to an input, in the accepting transaction: each becomes
   * `bound` (no longer a draft, no longer expiring). A file that is not a live draft of this owner
   * fails the whole submission: 404 when it does not exist for the caller (or expired), 409 when it
   * is attached already; the transaction rolls back, so nothing is stored.
   */
  async bindDrafts(manager: EntityManager, ownerId: string, fileIds: string[], sessionId: string, inputId: string): Promise<void> {
    if (fileIds.length === 0) return;
    // The rows are locked in id order first: two submissions binding overlapping files in different
    // orders then queue on the same first row instead of deadlocking, and the later one finds the
    // files bound (409) once the earlier commits.
    await manager.query(prepared(`SELECT id FROM files WHERE id = ANY($1::bpchar[]) AND owner_id = $2 ORDER BY id FOR UPDATE`), [fileIds, ownerId]);
    const sessionKeys = fileIds.map((id) => storageKeys.session(sessionId, id));
    const [rows] = (await manager.query(
      prepared(`UPDATE files f SET status = 'bound', session_id = $3, input_id = $4, session_key = k.session_key, bound_at = now(), expires_at = NULL,
         workdir_id = (SELECT workdir_id FROM sessions WHERE id = $3)
       FROM unnest($1::text[], $5::text[]) AS k(id, session_key)
       WHERE f.id = k.id AND f.owner_id = $2 AND f.status = 'draft' AND f.expires_at > now() RETURNING f.id`),
      [fileIds, ownerId, sessionId, inputId, sessionKeys],
    )) as [{ id: string }[], number];
    if (rows.length === fileIds.length) return;
    const bound = new Set(rows.map((row) => row.id.trim()));
    const missing = fileIds.filter((id) => !bound.has(id));
    const found = (await manager.query(prepared(`SELECT id, status FROM files WHERE id = ANY($1::text[]) AND owner_id = $2 AND ${ATTACHED}`), [
      missing,
      ownerId,
    ])) as { id: string; status: string }[];
    const attached = found[0]?.id.trim();
    if (attached) throw new DomainError('file_already_bound', `File ${attached} is already attached to an input`, { file_id: attached });
    throw new DomainError('not_found', `File ${missing[0]} not found (or its draft expired)`, { file_id: missing[0] });
  }

  /** The files bound to an input, in no particular order. */
  async filesOfInput(inputId: string): Promise<FileEntity[]> {
    const rows = (await this.dataSource.query(prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE input_id = $1 AND ${ATTACHED}`), [inputId])) as Record<
      string,
      unknown
    >[];
    return rows.map(fileFromRow);
  }

  /** The existing attachments of inputs (any state but gone), for input projections. */
  async filesOfInputs(inputIds: string[]): Promise<FileEntity[]> {
    if (inputIds.length === 0) return [];
    const rows = (await this.dataSource.query(prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE input_id = ANY($1::uuid[]) AND ${ATTACHED}`), [
      inputIds,
    ])) as Record<string, unknown>[];
    return rows.map(fileFromRow);
  }

  /** Files copied into the workdir become `ready` (call in the transaction that also marks their input). Returns how many changed. */
  async markReady(manager: EntityManager, inputId: string, fileIds: string[]): Promise<number> {
    const [, count] = (await manager.query(
      prepared(`UPDATE files SET status = 'ready', ready_at = now() WHERE input_id = $1 AND id = ANY($2::text[]) AND status = 'bound'`),
      [inputId, fileIds],
    )) as [unknown[], number];
    return count;
  }

  /** Those of `fileIds` still attached to the input (bound or ready); the others were deleted meanwhile. */
  async stillAttached(manager: EntityManager, inputId: string, fileIds: string[]): Promise<string[]> {
    if (fileIds.length === 0) return [];
    const rows = (await manager.query(prepared(`SELECT id FROM files WHERE input_id = $1 AND id = ANY($2::text[]) AND ${ATTACHED}`), [
      inputId,
      fileIds,
    ])) as { id: string }[];
    return rows.map((row) => row.id.trim());
  }

  /** Whether every file of the input is in the workdir. */
  async allReady(manager: EntityManager, inputId: string): Promise<boolean> {
    const rows = (await manager.query(prepared(`SELECT 1 FROM files WHERE input_id = $1 AND status = 'bound' LIMIT 1`), [inputId])) as unknown[];
    return rows.length === 0;
  }

  /** The uploaded copy of a ready file is no longer needed (the workdir owns the content). */
  async clearDraftKey(id: string): Promise<void> {
    await this.dataSource.query(prepared(`UPDATE files SET draft_key = NULL WHERE id = $1 AND status = 'ready'`), [id]);
  }

  /** On consumption, each input's files bind to its last user message (call in the claiming transaction). */
  async bindToMessages(manager: EntityManager, pairs: { inputId: string; messageId: string }[]): Promise<void> {
    if (pairs.length === 0) return;
    await manager.query(
      prepared(`UPDATE files f SET message_id = p.message_id FROM unnest($1::uuid[], $2::uuid[]) AS p(input_id, message_id)
       WHERE f.input_id = p.input_id AND f.status = 'ready'`),
      [pairs.map((p) => p.inputId), pairs.map((p) => p.messageId)],
    );
  }

  /** The ready files bound to these messages (the model context's attachment lists). */
  async filesOfMessages(messageIds: string[]): Promise<FileEntity[]> {
    if (messageIds.length === 0) return [];
    const rows = (await this.dataSource.query(prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE message_id = ANY($1::uuid[]) AND status = 'ready' ORDER BY bound_at, id`), [
      messageIds,
    ])) as Record<string, unknown>[];
    return rows.map(fileFromRow);
  }

  /**
   * Every ready file in the session's workdir (what the agent's file tools see): the files of every
   * session sharing it (the sessions of its project), in bound order.
   */
  async readyInWorkdir(sessionId: string, limit: number, excluding: string[] = []): Promise<FileEntity[]> {
    const rows = (await this.dataSource.query(
      prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE workdir_id = (SELECT workdir_id FROM sessions WHERE id = $1) AND status = 'ready'
       AND NOT (id = ANY($3::text[])) ORDER BY bound_at, id LIMIT $2`),
      [sessionId, limit, excluding],
    )) as Record<string, unknown>[];
    return rows.map(fileFromRow);
  }

  /** One ready file of the session's workdir (attached in this session or another sharing the workdir), or null. */
  async readyInWorkdirById(sessionId: string, fileId: string): Promise<FileEntity | null> {
    if (!isFileId(fileId)) return null;
    const rows = (await this.dataSource.query(
      prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE id = $1 AND workdir_id = (SELECT workdir_id FROM sessions WHERE id = $2) AND status = 'ready'`),
      [fileId, sessionId],
    )) as Record<string, unknown>[];
    return rows[0] ? fileFromRow(rows[0]) : null;
  }

  /** One attachment (bound or ready) of the session, or null (an image a tool returned is a workdir file, not an attachment). */
  async inSession(manager: EntityManager | null, sessionId: string, fileId: string): Promise<FileEntity | null> {
    if (!isFileId(fileId)) return null;
    const rows = (await (manager ?? this.dataSource.manager).query(
      prepared(`SELECT ${FILE_COLUMNS} FROM files WHERE id = $1 AND session_id = $2 AND origin = 'upload' AND ${ATTACHED}`),
      [fileId, sessionId],
    )) as Record<string, unknown>[];
    return rows[0] ? fileFromRow(rows[0]) : null;
  }

  /** The session's attachments, bound order (then id), with the standard cursor (an attachment of this session). */
  async listInSession(sessionId: string, page: PageQuery): Promise<Page<FileEntity>> {
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const values: unknown[] = [sessionId, page.limit + 1];
    let after = '';
    if (page.after !== undefined) {
      const anchor = await this.inSession(null, sessionId, page.after);
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not an attachment of this session');
      // The anchor's time is compared in SQL: a JS Date would drop its microseconds.
      values.push(anchor.id);
      after = `AND (bound_at, id) ${page.order === 'desc' ? '<' : '>'} (SELECT bound_at, id FROM files WHERE id = $3)`;
    }
    const rows = (await this.dataSource.query(
      `SELECT ${FILE_COLUMNS} FROM files WHERE session_id = $1 AND origin = 'upload' AND ${ATTACHED} ${after}
       ORDER BY bound_at ${direction}, id ${direction} LIMIT $2`,
      values,
    )) as Record<string, unknown>[];
    return toPage(rows.map(fileFromRow), page.limit);
  }

  /**
   * The files the session holds (attachments bound or in its workdir, its inputs' inline images,
   * its tools' images: not tombstones) and their bytes as recorded at upload, by files_session_idx;
   * no blob is listed. An attachment of a project's workdir counts in the session that bound it.
   */
  async storage(sessionId: string, db: StorageQueryable = this.dataSource): Promise<{ count: number; bytes: number }> {
    const [row] = (await db.query(
      prepared(`SELECT count(*)::int AS count, coalesce(sum(bytes), 0)::float8 AS bytes FROM files WHERE session_id = $1 AND ${HELD}`),
      [sessionId],
    )) as { count: number; bytes: number }[];
    return { count: row?.count ?? 0, bytes: row?.bytes ?? 0 };
  }

  /** Tombstones an attachment, prepared or not (call under the session lock, after its rules were checked); never a tool's image. */
  async tombstoneAttachment(manager: EntityManager, sessionId: string, fileId: string): Promise<boolean> {
    const [, count] = (await manager.query(prepared(`UPDATE files SET status = 'deleting' WHERE id = $1 AND session_id = $2 AND origin = 'upload' AND ${ATTACHED}`), [fileId, sessionId])) as [
      unknown[],
      number,
    ];
    return count === 1;
  }

  /**
   * The files of deleted sessions (attachments and inline images) become tombstones, in the
   * deleting transaction: clients lose them with the session, and the files sweep removes their
   * bytes and rows in its bounded batches. An attachment in a project's workdir stays: the
   * project's other sessions use it, and it goes with the project. Returns how many.
   */
  async tombstoneSessionFiles(manager: EntityManager, sessionIds: string[]): Promise<number> {
    if (sessionIds.length === 0) return 0;
    const [, count] = (await manager.query(
      prepared(`UPDATE files SET status = 'deleting' WHERE session_id = ANY($1::uuid[])
         AND (status = 'inline' OR (${ATTACHED} AND (workdir_id IS NULL OR workdir_id = session_id)))`),
      [sessionIds],
    )) as [unknown[], number];
    return count;
  }

  /**
   * The purge of deleted sessions (libs/retention SessionPurge): their files that are still not
   * tombstones become tombstones, up to `limit`, now including the attachments of a cooperation
   * tree's shared workdir (the whole tree is purged; a live tree keeps them at delete only while a
   * member could still read them); an attachment of a project's workdir still stays with the
   * project, and keeps the session's row (and the input that bound it) until it goes. The files
   * sweep then removes the bytes and the rows, in its batches: the session's row goes once no files
   * row names it. Rows: how many became tombstones (bytes 0: the sweep removes them and their blobs).
   */
  async purgeSessions(sessionIds: string[], limit: number): Promise<{ rows: number; bytes: number }> {
    const [, count] = (await this.dataSource.query(
      prepared(`UPDATE files SET status = 'deleting' WHERE id IN (
         SELECT f.id FROM files f WHERE f.session_id = ANY($1::uuid[]) AND ${FILE_MACHINE.from('remove', 'f.status')}
           AND (${FILE_MACHINE.guard('f.status', 'inline', 'uploading')} OR (${FILE_MACHINE.guard('f.status', 'bound', 'ready')} AND (f.workdir_id IS NULL OR f.workdir_id = f.session_id
             OR f.workdir_id IN (SELECT s.root_session_id FROM sessions s WHERE s.id = f.session_id))))
         LIMIT $2 FOR UPDATE SKIP LOCKED)`),
      [sessionIds, limit],
    )) as [unknown[], number];
    return { rows: count, bytes: 0 };
  }

  // ---------------------------------------------------------------- the sweep's queries

  /** Expired drafts become tombstones, oldest first; concurrent sweeps skip each other's rows. */
  async tombstoneExpiredDrafts(limit: number): Promise<number> {
    const [, count] = (await this.dataSource.query(
      prepared(`UPDATE files SET status = 'deleting' WHERE id IN (
         SELECT id FROM files WHERE status = 'draft' AND expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`),
      [limit],
    )) as [unknown[], number];
    return count;
  }

  /** Uploads whose process died between the row and the blob become tombstones. */
  async tombstoneAbandonedUploads(limit: number): Promise<number> {
    const [, count] = (await this.dataSource.query(
      prepared(`UPDATE files SET status = 'deleting' WHERE id IN (
         SELECT id FROM files WHERE status = 'uploading' AND created_at < now() - $2::int * interval '1 second' ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED)`),
      [limit, ABANDONED_UPLOAD_S],
    )) as [unknown[], number];
    return count;
  }

  async tombstones(limit: number): Promise<Blobs[]> {
    const rows = (await this.dataSource.query(prepared(`SELECT id, draft_key, session_key FROM files WHERE status = 'deleting' ORDER BY created_at LIMIT $1`), [limit])) as {
      id: string;
      draft_key: string | null;
      session_key: string | null;
    }[];
    return rows.map((row) => ({ id: row.id, keys: [row.draft_key, row.session_key].filter((key): key is string => key !== null) }));
  }

  /** Ready files whose uploaded copy was not cleaned up (the preparer died right after committing). */
  async leftoverDraftBlobs(limit: number): Promise<Blobs[]> {
    const rows = (await this.dataSource.query(prepared(`SELECT id, draft_key FROM files WHERE status = 'ready' AND draft_key IS NOT NULL ORDER BY created_at LIMIT $1`), [
      limit,
    ])) as { id: string; draft_key: string }[];
    return rows.map((row) => ({ id: row.id, keys: [row.draft_key] }));
  }
}
