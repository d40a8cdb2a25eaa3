import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import { FILE_STORAGE, type FileStorage, storageKeys } from '#libs/files';
import { sha256 } from './checkout.js';

/**
 * Workspace files' bytes in the file storage (local or S3), content-addressed: one object per
 * distinct content, shared by every version and every workspace that holds it, written once. A
 * version commit uploads only what no earlier version stored. Files are streamed both ways: a
 * workspace file may be as large as the workspace's disk bound, far more than the worker's memory.
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

  /** Stores the `size` bytes `open` streams under `hash` (what the scan hashed them to) unless an object is there already. */
  async storeStream(hash: string, size: number, open: () => Promise<Readable>): Promise<boolean> {
    const key = storageKeys.blob(hash);
    if (await this.storage.exists(key)) return false;
    await this.storage.putStream(key, await open(), size);
    return true;
  }

  /**
   * The bytes of `hash` as a stream that fails at its end unless they hash to it (a store that
   * returns other bytes fails the checkout, never corrupts it silently).
   */
  async open(hash: string): Promise<Readable> {
    const source = await this.storage.open(storageKeys.blob(hash));
    return Readable.from(verified(source, hash));
  }

  /** The whole object (a symlink's target: a few bytes), checked against its hash. */
  async fetch(hash: string): Promise<Buffer> {
    const bytes = await this.storage.get(storageKeys.blob(hash));
    if (sha256(bytes) !== hash) throw new Error(`stored blob ${hash} does not hash to its name`);
    return bytes;
  }
}

async function* verified(source: Readable, hash: string): AsyncGenerator<Buffer> {
  const digest = createHash('sha256');
  for await (const chunk of source) {
    digest.update(chunk as Buffer);
    yield chunk as Buffer;
  }
  if (digest.digest('hex') !== hash) throw new Error(`stored blob ${hash} does not hash to its name`);
}
