import { Inject, Injectable, Logger } from '@nestjs/common';
import { FilesRepository, type Blobs } from './files.repository.js';
import { FILE_STORAGE, type FileStorage } from './storage/file-storage.js';

const BATCH = 200;

export interface FilesSweepReport {
  expiredDrafts: number;
  abandonedUploads: number;
  deleted: number;
  draftCopiesCleaned: number;
}

/**
 * The files' cleanup, run by a worker on a schedule (FILE_SWEEP_MS): expired drafts and uploads
 * abandoned between row and blob become tombstones; tombstones lose their blobs, then their rows;
 * the uploaded copy of a file already in its workdir is removed. Every step is idempotent and
 * decided in Postgres, so several workers may sweep at once and a crash mid-sweep loses nothing.
 */
@Injectable()
export class FilesSweep {
  private readonly logger = new Logger(FilesSweep.name);

  constructor(
    private readonly files: FilesRepository,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  async run(): Promise<FilesSweepReport> {
    const expiredDrafts = await this.files.tombstoneExpiredDrafts(BATCH);
    const abandonedUploads = await this.files.tombstoneAbandonedUploads(BATCH);
    let deleted = 0;
    for (const tombstone of await this.files.tombstones(BATCH)) {
      if (await this.removeBlobs(tombstone)) {
        await this.files.deleteTombstone(tombstone.id);
        deleted += 1;
      }
    }
    let draftCopiesCleaned = 0;
    for (const leftover of await this.files.leftoverDraftBlobs(BATCH)) {
      if (await this.removeBlobs(leftover)) {
        await this.files.clearDraftKey(leftover.id);
        draftCopiesCleaned += 1;
      }
    }
    if (expiredDrafts + abandonedUploads + deleted + draftCopiesCleaned > 0) {
      this.logger.log(`files sweep: ${expiredDrafts} expired drafts, ${abandonedUploads} abandoned uploads, ${deleted} files deleted, ${draftCopiesCleaned} uploaded copies cleaned`);
    }
    return { expiredDrafts, abandonedUploads, deleted, draftCopiesCleaned };
  }

  /** False when the store failed: the row stays, the next sweep tries again. */
  private async removeBlobs(blobs: Blobs): Promise<boolean> {
    try {
      for (const key of blobs.keys) await this.storage.delete(key);
      return true;
    } catch (error) {
      this.logger.warn(`file ${blobs.id}: bytes not removed yet: ${String(error)}`);
      return false;
    }
  }
}
