import { Inject, Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { newFileId, storageKeys } from '../file-ids.js';
import { FILE_STORAGE, type FileStorage } from '../storage/file-storage.js';
import { discardStaged } from './staged-images.js';
import { checkToolMedia, type ToolMediaPart } from '../tool/tool-media-check.js';
import { ToolImagesRepository } from '../tool/tool-images.repository.js';

/** What staging a tool result's media left: the files to bind with the result, and a note for each part that is not one. */
export interface StagedToolMedia {
  fileIds: string[];
  notes: string[];
}

/**
 * Stores the images a tool result returned as files of the session's workdir, in the two steps of
 * inline images around the transaction that records the result: `stage` (the rows, committed on
 * their own, then the blobs), the bind inside that transaction (ToolImagesRepository.bind, by
 * lifecycle), and `discard` when the result was not recorded (the lease was lost). A process that
 * dies in between leaves `uploading` rows that the files sweep treats as abandoned uploads: no file
 * is ever visible without its result, and a recorded result's files were bound with it.
 */
@Injectable()
export class StoreToolImages {
  private readonly logger = new Logger(StoreToolImages.name);

  constructor(
    private readonly images: ToolImagesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    private readonly config: AppConfig,
  ) {}

  /**
   * Never throws: the tool has run, and its result must still be recorded. Images that cannot be
   * stored (the database or the store failing) become notes like those refused by the limits.
   */
  async stage(sessionId: string, toolName: string, media: readonly ToolMediaPart[]): Promise<StagedToolMedia> {
    const { images, notes } = await checkToolMedia(toolName, media);
    if (images.length === 0) return { fileIds: [], notes };
    const staged = images.map((image) => {
      const id = newFileId();
      return { id, key: storageKeys.session(sessionId, id), filename: image.filename, bytes: image.bytes.length, mimeType: image.mimeType, sha256: image.sha256 };
    });
    const fileIds = staged.map((image) => image.id);
    try {
      await this.images.stage(sessionId, staged, { accountBytes: this.config.fileQuotaBytes, sessionBytes: this.config.sessionImageBytes });
    } catch (error) {
      // Over the account's quota or the session's cap (nothing was written): the result is recorded without its images.
      if (error instanceof DomainError) {
        const which = error.code === 'session_image_quota_exceeded' ? 'the session\'s images reached SESSION_IMAGE_BYTES' : 'the account\'s file quota (FILE_QUOTA_BYTES) is full';
        return { fileIds: [], notes: [...notes, ...images.map((image) => `[image ${image.number} not shown: it was not stored, ${which}]`)] };
      }
      return this.unstored(toolName, fileIds, images, notes, error);
    }
    try {
      // One at a time: a result holds at most 10 images, and the model call waits for them anyway.
      for (const [index, image] of staged.entries()) await this.storage.put(image.key, images[index]!.bytes);
      return { fileIds, notes };
    } catch (error) {
      return this.unstored(toolName, fileIds, images, notes, error);
    }
  }

  private async unstored(toolName: string, fileIds: string[], images: readonly { number: number }[], notes: string[], error: unknown): Promise<StagedToolMedia> {
    this.logger.warn(`images of a ${toolName} result not stored (the model is told so): ${String(error)}`);
    await this.discard(fileIds);
    return { fileIds: [], notes: [...notes, ...images.map((image) => `[image ${image.number} not shown: it could not be stored]`)] };
  }

  /** Best effort: what is left here (storage or database down) is finished by the files sweep. */
  async discard(fileIds: string[]): Promise<void> {
    try {
      await discardStaged(this.images, this.storage, fileIds);
    } catch (error) {
      this.logger.warn(`images of a tool result that was not recorded are left to the files sweep: ${String(error)}`);
    }
  }
}
