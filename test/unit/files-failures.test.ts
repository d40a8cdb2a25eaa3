import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { type DecodedImage, type FilesRepository, type FileStorage, StorageUnavailableError, StoreInlineImages, UploadFile } from '#libs/files';
import { PNG } from '../support/file-fixtures.js';

// Failures of the outside world (a store that fails or is slow, a row the sweep took away) injected
// into the files use cases through fakes of their storage and repository.

/** An in-memory store whose writes wait for `release()`, except those told to fail at once. */
class GatedStorage implements FileStorage {
  readonly driver = 'local' as const;
  readonly objects = new Map<string, Uint8Array>();
  readonly started: string[] = [];
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.opened = resolve));

  constructor(private readonly failing: Set<string>) {}

  release(): void {
    this.opened();
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    this.started.push(key);
    if (this.failing.has(key)) throw new StorageUnavailableError('put', key, new Error('disk full'));
    await this.gate;
    this.objects.set(key, bytes);
  }

  async putStream(key: string, body: Readable): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    await this.put(key, Buffer.concat(chunks));
  }

  async get(key: string): Promise<Buffer> {
    return Buffer.from(this.objects.get(key)!);
  }

  async open(key: string): Promise<Readable> {
    return Readable.from([await this.get(key)]);
  }

  async exists(key: string): Promise<boolean> {
    return this.objects.has(key);
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key);
  }
}

/** The rows side of inline images: what was staged, and what discard tombstoned and deleted. */
function fakeImagesRepository() {
  const rows = new Map<string, string>();
  return {
    rows,
    stage: async (_owner: string, images: { id: string; key: string }[]) => images.forEach((image) => rows.set(image.id, image.key)),
    tombstoneStaged: async (ids: string[]) => ids.filter((id) => rows.has(id)).map((id) => ({ id, key: rows.get(id)! })),
    deleteTombstone: async (id: string) => void rows.delete(id),
  };
}

const settledYet = async (promise: Promise<unknown>): Promise<boolean> => {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  // Past every microtask and a turn of the event loop: a rejection already decided has been seen.
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
};

describe('StoreInlineImages.stage when one write fails', () => {
  it('starts no further write, waits for those under way, so that discard leaves no blob behind', async () => {
    const ids = StoreInlineImages.newIds(10);
    const images: DecodedImage[] = ids.map(() => ({ bytes: PNG, mimeType: 'image/png', sha256: 'x'.repeat(64) }));
    const repository = fakeImagesRepository();
    // The second write fails while the first, third and fourth are still on their way.
    const storage = new GatedStorage(new Set([`inline/${ids[1]}`]));
    const store = new StoreInlineImages(repository as never, storage, new AppConfig({ DATABASE_URL: 'postgres://x', REDIS_URL: 'redis://x' }));
    const keyOf = (id: string) => repository.rows.get(id)!;

    const staging = store.stage('owner', ids, images, { sessionId: null });
    assert.equal(await settledYet(staging), false, 'the failure is not reported while writes are still under way');
    storage.release();
    await assert.rejects(staging, StorageUnavailableError);
    assert.deepEqual(storage.started, ids.slice(0, 4).map(keyOf), 'nothing was started after the failure');

    // What Acceptance does next: discard the staging. Every blob written is removed with its row.
    await store.discard(ids);
    assert.equal(storage.objects.size, 0, 'no blob is left without a row');
    assert.equal(repository.rows.size, 0);
  });
});

describe('UploadFile when the row was swept during a very slow write', () => {
  it('answers service_unavailable (retryable), never an internal error', async () => {
    const files = {
      reserveUpload: async () => undefined,
      // The sweep tombstoned the upload as abandoned while its blob was being written.
      completeUpload: async () => null,
      abandonUpload: async () => undefined,
    } as unknown as FilesRepository;
    const storage = new GatedStorage(new Set());
    storage.release();
    const config = { fileDraftTtlS: 3600, fileQuotaBytes: 1 << 30, fileQuotaDrafts: 100 } as AppConfig;
    const upload = new UploadFile(files, storage, config);
    const principal = { userId: '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0' } as Principal;
    await assert.rejects(upload.execute(principal, { originalName: 'notes.txt', bytes: Buffer.from('hello') }), (error: unknown) => {
      assert.ok(error instanceof DomainError);
      assert.equal(error.code, 'service_unavailable');
      assert.match(error.message, /upload the file again/);
      return true;
    });
  });
});
