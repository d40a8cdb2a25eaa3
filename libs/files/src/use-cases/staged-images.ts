import type { FileStorage } from '../storage/file-storage.js';

/** The rows of images staged before the fact that binds them (inline images, tool images). */
export interface StagedImageRows {
  tombstoneStaged(fileIds: string[]): Promise<{ id: string; key: string }[]>;
  deleteTombstone(id: string): Promise<void>;
}

/**
 * Removes staged images nothing bound: the rows still staged are tombstoned, then each blob and
 * its tombstone go. Throws on an outage; the files sweep finishes what is left.
 */
export async function discardStaged(rows: StagedImageRows, storage: FileStorage, fileIds: string[]): Promise<void> {
  for (const { id, key } of await rows.tombstoneStaged(fileIds)) {
    await storage.delete(key);
    await rows.deleteTombstone(id);
  }
}
