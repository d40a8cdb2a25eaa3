import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { type FileDeletedDto, type FileDto, toFileDto } from '../file.dto.js';
import { newFileId, storageKeys } from '../file-ids.js';
import { sanitizeFilename } from '../filename.js';
import { sniffUpload } from '../file-sniffing.js';
import { FilesRepository } from '../files.repository.js';
import { FILE_STORAGE, type FileStorage } from '../storage/file-storage.js';

/** The largest file accepted: 5 MiB, the API's upload limit. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024;

/** What the HTTP layer received: the client's filename (untrusted) and the bytes. */
export interface ReceivedUpload {
  originalName: string;
  bytes: Buffer;
}

/** An upload that passed the checks: its sanitised name, detected type and SHA-256. */
export interface CheckedUpload {
  bytes: Buffer;
  filename: string;
  mimeType: string;
  sha256: string;
}

/**
 * `POST /files`: a draft from an upload. The type is decided from the bytes, the name sanitised,
 * the key generated here; the row is reserved within the owner's quota before the blob is
 * written, and becomes a draft once the blob is stored.
 */
@Injectable()
export class UploadFile {
  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, upload: ReceivedUpload): Promise<FileDto> {
    const checked = await this.check(upload);
    const id = await this.store(principal, checked);
    return this.complete(id);
  }

  /** Refuses what cannot become a draft (empty, too large, a type not accepted); the draft's name, type and hash. */
  async check(upload: ReceivedUpload): Promise<CheckedUpload> {
    const { bytes } = upload;
    if (bytes.length === 0) throw DomainError.validation([{ field: 'file', errors: ['must not be empty'] }]);
    if (bytes.length > MAX_FILE_BYTES) throw new DomainError('file_too_large', `The file exceeds ${MAX_FILE_BYTES} bytes`, { limit_bytes: MAX_FILE_BYTES });
    const filename = sanitizeFilename(upload.originalName);
    const sniffed = await sniffUpload(bytes, filename);
    if (!sniffed.ok) {
      throw new DomainError(sniffed.reason === 'mismatch' ? 'file_type_mismatch' : 'file_type_not_allowed', sniffed.message, { filename, detected_type: sniffed.detected });
    }
    return { bytes, filename, mimeType: sniffed.mimeType, sha256: createHash('sha256').update(bytes).digest('hex') };
  }

  /** Reserves the row within the quotas and stores the blob; returns the upload's id (not a draft until completed). */
  async store(principal: Principal, upload: CheckedUpload): Promise<string> {
    const id = newFileId();
    await this.files.reserveUpload(
      { id, ownerId: principal.userId, accountId: principal.actorId, filename: upload.filename, bytes: upload.bytes.length, mimeType: upload.mimeType, sha256: upload.sha256 },
      this.config.fileDraftTtlS,
      { bytes: this.config.fileQuotaBytes, drafts: this.config.fileQuotaDrafts },
    );
    try {
      await this.storage.put(storageKeys.draft(id), upload.bytes);
    } catch (error) {
      await this.files.abandonUpload(id).catch(() => undefined);
      throw error;
    }
    return id;
  }

  /** The stored upload becomes a draft; with `manager`, in that transaction (an idempotent upload's, with its receipt). */
  async complete(id: string, manager?: EntityManager): Promise<FileDto> {
    const file = await this.files.completeUpload(id, manager);
    // Only the sweep takes an upload away, and only one whose blob took many minutes to store
    // (a storage outage in all but name): the draft is gone, and a new upload may well succeed.
    if (!file) {
      // The sweep found no blob yet when it removed the row; the one just written belongs to nothing.
      await this.storage.delete(storageKeys.draft(id)).catch(() => undefined);
      throw new DomainError('service_unavailable', 'File storage took too long to store the upload and it was discarded; upload the file again');
    }
    return toFileDto(file);
  }

  /** A stored upload that will not become a draft (an idempotent retry answered by its first upload): a tombstone for the sweep. */
  async abandon(id: string): Promise<void> {
    await this.files.abandonUpload(id);
  }
}

/** `GET /files/{id}`: a draft of the caller; an attached file is read through its session (409 here). */
@Injectable()
export class GetFile {
  constructor(private readonly files: FilesRepository) {}

  async execute(principal: Principal, fileId: string): Promise<FileDto> {
    const file = await this.files.findOwned(principal.userId, fileId);
    if (!file) throw DomainError.notFound(`File ${fileId}`);
    if (file.status !== 'draft') throw attachedAlready(file.id);
    return toFileDto(file);
  }
}

/** `DELETE /files/{id}`: removes an unattached draft, row and bytes. */
@Injectable()
export class DeleteFile {
  private readonly logger = new Logger(DeleteFile.name);

  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  async execute(principal: Principal, fileId: string): Promise<FileDeletedDto> {
    const tombstone = await this.files.tombstoneDraft(principal.userId, fileId);
    if (!tombstone) {
      const file = await this.files.findOwned(principal.userId, fileId);
      if (file) throw attachedAlready(file.id);
      throw DomainError.notFound(`File ${fileId}`);
    }
    // The draft is gone for clients from here on; a blob that cannot be removed now stays a
    // tombstone, which the files sweep finishes.
    try {
      if (tombstone.draftKey) await this.storage.delete(tombstone.draftKey);
      await this.files.deleteTombstone(tombstone.id);
    } catch (error) {
      this.logger.warn(`draft ${tombstone.id} deleted; its bytes are left to the sweep: ${String(error)}`);
    }
    return { id: tombstone.id, object: 'file.deleted', deleted: true };
  }
}

function attachedAlready(fileId: string): DomainError {
  return new DomainError('file_already_bound', `File ${fileId} is attached to a session input; read it through the session's attachments`, { file_id: fileId });
}
