import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { isStorageKey } from '../file-ids.js';
import { type FileStorage, StorageObjectMissing, StorageUnavailableError, UnsafeStorageKeyError } from './file-storage.js';

/**
 * Files in a directory (STORAGE_DIR), shared by the api and the worker (one host, or a shared
 * volume). Writes go to a temporary file that is synced and renamed into place, so a reader never
 * sees half an object and a crash leaves at most a stray temporary file.
 */
export class LocalFileStorage implements FileStorage {
  readonly driver = 'local' as const;
  private readonly root: string;

  constructor(dir: string) {
    this.root = path.resolve(dir);
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    await this.write(key, (handle) => handle.writeFile(bytes));
  }

  async putStream(key: string, body: Readable, size: number): Promise<void> {
    await this.write(key, async (handle) => {
      let written = 0;
      for await (const chunk of body) {
        const bytes = chunk as Buffer;
        await handle.write(bytes, 0, bytes.byteLength);
        written += bytes.byteLength;
      }
      if (written !== size) throw new Error(`the stream held ${written} bytes, not ${size}`);
    });
  }

  private async write(key: string, fill: (handle: FileHandle) => Promise<void>): Promise<void> {
    const target = this.pathOf(key);
    const temporary = `${target}.tmp-${randomBytes(6).toString('hex')}`;
    try {
      await mkdir(path.dirname(target), { recursive: true });
      const handle = await open(temporary, 'wx', 0o600);
      try {
        await fill(handle);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, target);
    } catch (error) {
      await rm(temporary, { force: true }).catch(() => undefined);
      throw new StorageUnavailableError('put', key, error);
    }
  }

  async get(key: string): Promise<Buffer> {
    const target = this.pathOf(key);
    try {
      return await readFile(target);
    } catch (error) {
      if (isMissing(error)) throw new StorageObjectMissing(key);
      throw new StorageUnavailableError('get', key, error);
    }
  }

  async open(key: string): Promise<Readable> {
    const target = this.pathOf(key);
    try {
      // The handle is opened first: a missing file is an error here, not in the middle of a response.
      const handle = await open(target, 'r');
      return handle.createReadStream();
    } catch (error) {
      if (isMissing(error)) throw new StorageObjectMissing(key);
      throw new StorageUnavailableError('open', key, error);
    }
  }

  async exists(key: string): Promise<boolean> {
    const target = this.pathOf(key);
    try {
      return (await stat(target)).isFile();
    } catch (error) {
      if (isMissing(error)) return false;
      throw new StorageUnavailableError('stat', key, error);
    }
  }

  async delete(key: string): Promise<void> {
    const target = this.pathOf(key);
    try {
      await rm(target, { force: true });
    } catch (error) {
      throw new StorageUnavailableError('delete', key, error);
    }
  }

  /** The key's path, proven to lie under the root (the key shape already excludes `..` and absolute paths). */
  private pathOf(key: string): string {
    if (!isStorageKey(key)) throw new UnsafeStorageKeyError(key);
    const target = path.resolve(this.root, key);
    if (!target.startsWith(this.root + path.sep)) throw new UnsafeStorageKeyError(key);
    return target;
  }
}

function isMissing(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
