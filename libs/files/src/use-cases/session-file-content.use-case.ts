import type { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import type { FileEntity } from '../file.entity.js';
import { InlineImagesRepository } from '../inline/inline-images.repository.js';
import { FILE_STORAGE, type FileStorage, StorageObjectMissing } from '../storage/file-storage.js';

export interface SessionFileContent {
  file: FileEntity;
  /** The bytes, streamed from the store (an inline image may be tens of MiB): consume or destroy it. */
  stream: Readable;
}

/**
 * `GET …/sessions/{session_id}/files/{file_id}/content`: the bytes of a session file (an inline
 * image of a message, or an attachment in the workdir), authorised like the session: 404 for a
 * session the caller cannot see and for a file of another session.
 */
@Injectable()
export class GetSessionFileContent {
  constructor(
    private readonly images: InlineImagesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  /**
   * `sessionIds`: the session read through, then the sessions whose files it also shows (see
   * InlineImagesRepository.readable); `admit`: the caller's further say on a file found (false: not found).
   */
  async execute(principal: Principal, sessionIds: readonly string[], fileId: string, admit?: (file: FileEntity) => Promise<boolean>): Promise<SessionFileContent> {
    const file = await this.images.readable(principal.userId, sessionIds, fileId);
    if (!file || (admit !== undefined && !(await admit(file)))) throw DomainError.notFound(`File ${fileId}`);
    // An attachment is bound at acceptance and in the workdir once the worker prepared it.
    if (file.status !== 'ready' && file.status !== 'inline') throw new DomainError('file_not_ready', `File ${fileId} is still being prepared into the session workdir`, { file_id: fileId });
    if (!file.sessionKey) throw DomainError.notFound(`File ${fileId}`);
    try {
      return { file, stream: await this.storage.open(file.sessionKey) };
    } catch (error) {
      if (error instanceof StorageObjectMissing) throw DomainError.notFound(`File ${fileId}`);
      throw error;
    }
  }
}
