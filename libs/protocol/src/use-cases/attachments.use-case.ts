import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { Principal } from '#libs/auth';
import { type AttachmentDeletedDto, FILE_STORAGE, FilesRepository, type FileStorage } from '#libs/files';
import { SessionControls, SessionsRepository } from '#libs/engine';

/**
 * `DELETE …/sessions/{id}/attachments/{file_id}`: removes an attachment's record and bytes (the
 * history keeps no placeholder; the input's attachment_file_ids stay as received). The rules are
 * checked and the file tombstoned under the session lock; the bytes go after the commit (the
 * files sweep finishes a removal that fails).
 */
@Injectable()
export class DeleteAttachment {
  private readonly logger = new Logger(DeleteAttachment.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly controls: SessionControls,
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  async execute(principal: Principal, sessionId: string, fileId: string): Promise<AttachmentDeletedDto> {
    const file = await this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lockVisible(manager, principal.userId, sessionId);
      return this.controls.deleteAttachment(manager, session, fileId);
    });
    try {
      for (const key of [file.sessionKey, file.draftKey]) if (key) await this.storage.delete(key);
      await this.files.deleteTombstone(file.id);
    } catch (error) {
      this.logger.warn(`attachment ${file.id} deleted; its bytes are left to the files sweep: ${String(error)}`);
    }
    return { id: file.id, object: 'yuxi.session.attachment.deleted', session_id: sessionId, deleted: true };
  }
}
