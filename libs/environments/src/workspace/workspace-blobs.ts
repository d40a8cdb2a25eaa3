import { Inject, Injectable } from '@nestjs/common';
import { FILE_STORAGE, type FileStorage, storageKeys } from '#libs/files';
import { sha256 } from './checkout.js';

/**
 * Workspace files' bytes in the file storage (local or S3), content-addressed: one object per
 * distinct content, shared by every version and every workspace that holds it, written once. A
 * version commit uploads only what no earlier version stored.
 */
@Injectable()
export class WorkspaceBlobs {
  constructor(@Inject(FILE_STORAGE) private readonly storage: FileStorage) {}

  /** Stores `bytes` under their hash unless an object is there already; true when it was written. */
  async store(bytes: Buffer): Promise<boolean> {
    const key = storageKeys.blob(sha256(bytes));
    if (await this.storage.exists(key)) return false;
    await this.storage.put(key, bytes);
    return true;
  }

  /** The bytes of `sha256`, checked against it (a store that returns other bytes fails the checkout, never corrupts it). */
  async fetch(hash: string): Promise<Buffer> {
    const bytes = await this.storage.get(storageKeys.blob(hash));
    if (sha256(bytes) !== hash) throw new Error(`stored blob ${hash} does not hash to its name`);
    return bytes;
  }
}
