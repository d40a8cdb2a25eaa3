import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import type { StorageSettings } from '#libs/config';
import { isStorageKey } from '../file-ids.js';
import { type FileStorage, StorageObjectMissing, StorageUnavailableError, UnsafeStorageKeyError } from './file-storage.js';

type S3Settings = Extract<StorageSettings, { driver: 's3' }>;

/** Bounds on one request, so a stalled store fails a call instead of holding it forever. */
const CONNECT_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * Objects in an S3-compatible bucket (AWS S3, MinIO, …) through the official AWS SDK v3. Every key
 * is stored under S3_KEY_PREFIX. Checksums are only sent where the operation requires them:
 * S3-compatible stores do not all accept the SDK's default flexible checksums.
 */
export class S3FileStorage implements FileStorage {
  readonly driver = 's3' as const;
  private readonly client: S3Client;

  constructor(private readonly settings: S3Settings) {
    this.client = new S3Client({
      region: settings.region,
      endpoint: settings.endpoint,
      forcePathStyle: settings.forcePathStyle,
      credentials: settings.credentials,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 2,
      requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: REQUEST_TIMEOUT_MS },
    });
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    const Key = this.objectKey(key);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.settings.bucket, Key, Body: bytes, ContentLength: bytes.byteLength }));
    } catch (error) {
      throw new StorageUnavailableError('put', key, error);
    }
  }

  async putStream(key: string, body: Readable, size: number): Promise<void> {
    const Key = this.objectKey(key);
    try {
      // One PUT streams the body with its length known up front (S3 takes up to 5 GB this way).
      await this.client.send(new PutObjectCommand({ Bucket: this.settings.bucket, Key, Body: body, ContentLength: size }));
    } catch (error) {
      body.destroy();
      throw new StorageUnavailableError('put', key, error);
    }
  }

  async get(key: string): Promise<Buffer> {
    const Key = this.objectKey(key);
    try {
      const result = await this.client.send(new GetObjectCommand({ Bucket: this.settings.bucket, Key }));
      if (!result.Body) throw new Error('empty response body');
      return Buffer.from(await result.Body.transformToByteArray());
    } catch (error) {
      if (isNotFound(error)) throw new StorageObjectMissing(key);
      throw new StorageUnavailableError('get', key, error);
    }
  }

  async open(key: string): Promise<Readable> {
    const Key = this.objectKey(key);
    try {
      const result = await this.client.send(new GetObjectCommand({ Bucket: this.settings.bucket, Key }));
      if (!result.Body) throw new Error('empty response body');
      // In Node the SDK's body is the HTTP response stream itself.
      if (result.Body instanceof Readable) return result.Body;
      return Readable.fromWeb(result.Body.transformToWebStream() as Parameters<typeof Readable.fromWeb>[0]);
    } catch (error) {
      if (isNotFound(error)) throw new StorageObjectMissing(key);
      throw new StorageUnavailableError('open', key, error);
    }
  }

  async exists(key: string): Promise<boolean> {
    const Key = this.objectKey(key);
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.settings.bucket, Key }));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw new StorageUnavailableError('head', key, error);
    }
  }

  async delete(key: string): Promise<void> {
    const Key = this.objectKey(key);
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.settings.bucket, Key }));
    } catch (error) {
      if (isNotFound(error)) return;
      throw new StorageUnavailableError('delete', key, error);
    }
  }

  destroy(): void {
    this.client.destroy();
  }

  private objectKey(key: string): string {
    if (!isStorageKey(key)) throw new UnsafeStorageKeyError(key);
    return `${this.settings.keyPrefix}${key}`;
  }
}

function isNotFound(error: unknown): boolean {
  if (error instanceof S3ServiceException) return error.name === 'NoSuchKey' || error.name === 'NotFound' || error.$metadata.httpStatusCode === 404;
  return false;
}
