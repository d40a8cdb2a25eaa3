import type { Readable } from 'node:stream';
import { STORAGE_UNAVAILABLE } from '#libs/errors';

/**
 * Where file bytes live, behind one contract that the local-directory and the S3 drivers both
 * pass (test/components/storage-contract.test.ts). Keys come from `storageKeys` only; a driver refuses
 * any other key, so nothing a client sends can address a path or object outside the storage root.
 */
export interface FileStorage {
  readonly driver: 'local' | 's3';
  /** Writes the whole object; an existing one is replaced (writing the same bytes twice is harmless). */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** As put, from a stream of exactly `size` bytes, never holding the object in memory (files of any size). */
  putStream(key: string, body: Readable, size: number): Promise<void>;
  /** The whole object; StorageObjectMissing when there is none. */
  get(key: string): Promise<Buffer>;
  /**
   * The object as a stream, for serving it without holding it in memory. Settles once the store
   * has answered (StorageObjectMissing before any byte when there is none), so a caller can still
   * answer an error instead of a broken body; the caller must consume or destroy the stream.
   */
  open(key: string): Promise<Readable>;
  exists(key: string): Promise<boolean>;
  /** Removes the object; a missing one is not an error. */
  delete(key: string): Promise<void>;
}

export const FILE_STORAGE = Symbol('FILE_STORAGE');

/** The object is not there (deleted, never written, or lost by the store). */
export class StorageObjectMissing extends Error {
  constructor(readonly key: string) {
    super(`no stored object ${key}`);
    this.name = 'StorageObjectMissing';
  }
}

/** The store failed (unreachable, refused, full): a dependency outage, answered 503 by the api and retried by the worker. */
export class StorageUnavailableError extends Error {
  readonly code = STORAGE_UNAVAILABLE;

  constructor(operation: string, key: string, cause: unknown) {
    super(`file storage ${operation} ${key} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'StorageUnavailableError';
  }
}

/** Thrown for a key storageKeys did not make: a bug, never a client's doing. */
export class UnsafeStorageKeyError extends Error {
  constructor(key: string) {
    super(`refusing storage key ${JSON.stringify(key)}`);
    this.name = 'UnsafeStorageKeyError';
  }
}
