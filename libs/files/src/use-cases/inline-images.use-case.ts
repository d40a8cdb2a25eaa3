import { Inject, Injectable, Logger } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { newFileId, storageKeys } from '../file-ids.js';
import { imageExtension } from '../inline/inline-image-sniffing.js';
import { InlineImagesRepository, type StagedImage } from '../inline/inline-images.repository.js';
import { FILE_STORAGE, type FileStorage, StorageObjectMissing } from '../storage/file-storage.js';
import { discardStaged } from './staged-images.js';

/** An inline image of a submission, decoded and sniffed (see checkInlineImage). */
export interface DecodedImage {
  bytes: Buffer;
  mimeType: string;
  /** SHA-256 of the bytes, hex (recorded on the file, and what the idempotency intent holds instead of the data URL). */
  sha256: string;
}

/** Blobs written at once while staging one submission (at most 200 images: 20 messages of 10). */
const PUT_CONCURRENCY = 4;

/**
 * Stores the inline images of a submission as session files, in three steps around the accepting
 * transaction: `stage` (after the idempotency receipt was looked up, so a replay stores nothing)
 * writes the rows, committed on their own, then the blobs under server keys; `bind`, in the
 * accepting transaction, attaches the rows to the session and input; `discard` removes a staging
 * whose submission did not commit (refused, or lost a race with the same key). A process that dies
 * in between leaves `uploading` rows that the files sweep treats as abandoned uploads.
 */
@Injectable()
export class StoreInlineImages {
  private readonly logger = new Logger(StoreInlineImages.name);

  constructor(
    private readonly images: InlineImagesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
    private readonly config: AppConfig,
  ) {}

  /** New file ids for a submission's images, in order (nothing is written yet). */
  static newIds(count: number): string[] {
    return Array.from({ length: count }, () => newFileId());
  }

  /**
   * Within the owner's account's FILE_QUOTA_BYTES and the session's SESSION_IMAGE_BYTES (`sessionId`:
   * the session they join, null for one being created): 413 otherwise, nothing stored.
   */
  async stage(ownerId: string, fileIds: string[], images: DecodedImage[], bound: { sessionId: string | null }): Promise<void> {
    const staged: StagedImage[] = images.map((image, index) => {
      const id = fileIds[index]!;
      return {
        id,
        key: storageKeys.inline(id),
        filename: `image-${index + 1}.${imageExtension(image.mimeType)}`,
        bytes: image.bytes.length,
        mimeType: image.mimeType,
        sha256: image.sha256,
      };
    });
    await this.images.stage(ownerId, staged, { ...bound, quota: { accountBytes: this.config.fileQuotaBytes, sessionBytes: this.config.sessionImageBytes } });
    // After the first failure no further write starts, and the writes under way are waited for
    // before the failure is thrown: the caller's discard runs after the last blob landed, so it
    // removes them all (a write landing after it would leave a blob that no row knows).
    let next = 0;
    let failed = false;
    const worker = async (): Promise<void> => {
      while (!failed && next < staged.length) {
        const index = next++;
        try {
          await this.storage.put(staged[index]!.key, images[index]!.bytes);
        } catch (error) {
          failed = true;
          throw error;
        }
      }
    };
    const results = await Promise.allSettled(Array.from({ length: Math.min(PUT_CONCURRENCY, staged.length) }, worker));
    const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure) throw failure.reason;
  }

  /** In the accepting transaction. A staging the sweep took away meanwhile fails the submission (retryable). */
  async bind(manager: EntityManager, ownerId: string, fileIds: string[], sessionId: string, inputId: string): Promise<void> {
    const bound = await this.images.bind(manager, ownerId, fileIds, sessionId, inputId);
    if (bound !== fileIds.length) {
      throw new DomainError('service_unavailable', 'The inline images of this submission were not stored in time; retry with the same Idempotency-Key');
    }
  }

  /** Best effort: what is left here (storage or database down) is finished by the files sweep. */
  async discard(fileIds: string[]): Promise<void> {
    try {
      await discardStaged(this.images, this.storage, fileIds);
    } catch (error) {
      this.logger.warn(`inline images of a submission that did not commit are left to the files sweep: ${String(error)}`);
    }
  }
}

/**
 * The worker's side: the bytes of inline images as data URLs, for the model request. The caller
 * names the sessions whose items refer to them (a fork's context shows its ancestors' items).
 * An image whose row or blob is gone is left out of the answer (the caller says so to the model);
 * a storage outage throws (the run stops and recovery continues it).
 */
@Injectable()
export class ResolveSessionImages {
  constructor(
    private readonly images: InlineImagesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  async dataUrls(sessionIds: string[], fileIds: string[]): Promise<Map<string, string>> {
    const urls = new Map<string, string>();
    for (const file of await this.images.imagesOf(sessionIds, [...new Set(fileIds)])) {
      if (!file.sessionKey) continue;
      try {
        const bytes = await this.storage.get(file.sessionKey);
        urls.set(file.id, `data:${file.mimeType};base64,${bytes.toString('base64')}`);
      } catch (error) {
        if (!(error instanceof StorageObjectMissing)) throw error;
      }
    }
    return urls;
  }
}
