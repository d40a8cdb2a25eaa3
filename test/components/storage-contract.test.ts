import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import S3rver from 's3rver';
import { createFileStorage, type FileStorage, newFileId, S3FileStorage, StorageObjectMissing, storageKeys, UnsafeStorageKeyError } from '#libs/files';

// One contract, two drivers: the local directory and S3 (against s3rver, a local S3-compatible
// server started here on 127.0.0.1). What the api and the worker rely on must hold for both.
const SESSION = '01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9e';
const UNSAFE_KEYS = ['../../etc/passwd', 'drafts/../../outside', '/etc/passwd', 'drafts/ABCDEF', 'drafts/', '', 'sessions/x/files/y', `drafts/${'0'.repeat(32)}/../x`, 'drafts\\..\\x'];

interface Driver {
  name: string;
  storage: FileStorage;
  /** Every file under the local root (local driver only), to prove nothing lands elsewhere. */
  files?: () => Promise<string[]>;
}

async function listTree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((entry) => entry.isFile()).map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

function contract(driver: () => Driver): void {
  it('stores, reads back, overwrites and deletes objects under generated keys', async () => {
    const { storage } = driver();
    const key = storageKeys.draft(newFileId());
    const bytes = Buffer.from('hello storage ✓');
    assert.equal(await storage.exists(key), false);
    await storage.put(key, bytes);
    assert.equal(await storage.exists(key), true);
    assert.deepEqual(await storage.get(key), bytes);
    const replaced = Buffer.from([0, 1, 2, 255]);
    await storage.put(key, replaced);
    assert.deepEqual(await storage.get(key), replaced, 'a second put replaces the object');
    await storage.delete(key);
    assert.equal(await storage.exists(key), false);
    await assert.rejects(storage.get(key), StorageObjectMissing);
  });

  it('keeps session files apart from drafts, and binary content intact (5 MiB)', async () => {
    const { storage } = driver();
    const id = newFileId();
    const big = Buffer.alloc(5 * 1024 * 1024, 7);
    big[0] = 0x89;
    big[big.length - 1] = 0;
    await storage.put(storageKeys.session(SESSION, id), big);
    assert.equal(await storage.exists(storageKeys.draft(id)), false, 'a session file is not a draft of the same id');
    assert.ok((await storage.get(storageKeys.session(SESSION, id))).equals(big));
    await storage.delete(storageKeys.session(SESSION, id));
  });

  it('streams an object, byte for byte, without reading it whole first', async () => {
    const { storage } = driver();
    const key = storageKeys.session(SESSION, newFileId());
    const big = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < big.length; i++) big[i] = i % 251;
    await storage.put(key, big);
    const chunks: Buffer[] = [];
    for await (const chunk of await storage.open(key)) chunks.push(chunk as Buffer);
    assert.ok(chunks.length > 1, 'the object arrives in several chunks');
    assert.ok(Buffer.concat(chunks).equals(big));
    await storage.delete(key);
  });

  it('reports a missing object as missing, and deleting one is not an error', async () => {
    const { storage } = driver();
    const key = storageKeys.draft(newFileId());
    await assert.rejects(storage.get(key), StorageObjectMissing);
    await assert.rejects(storage.open(key), StorageObjectMissing, 'before any byte is sent');
    await storage.delete(key);
    assert.equal(await storage.exists(key), false);
  });

  it('refuses every key it did not generate, before touching the store', async () => {
    const { storage, files } = driver();
    const before = files ? await files() : [];
    for (const key of UNSAFE_KEYS) {
      await assert.rejects(storage.put(key, Buffer.from('x')), UnsafeStorageKeyError, `put ${JSON.stringify(key)}`);
      await assert.rejects(storage.get(key), UnsafeStorageKeyError, `get ${JSON.stringify(key)}`);
      await assert.rejects(storage.open(key), UnsafeStorageKeyError, `open ${JSON.stringify(key)}`);
      await assert.rejects(storage.delete(key), UnsafeStorageKeyError, `delete ${JSON.stringify(key)}`);
    }
    if (files) assert.deepEqual(await files(), before, 'nothing was written');
  });

  it('only generates keys from ids: a client string never becomes a key', () => {
    assert.throws(() => storageKeys.draft('../../etc/passwd'));
    assert.throws(() => storageKeys.session('../x', newFileId()));
    assert.throws(() => storageKeys.session(SESSION, 'report.pdf'));
  });
}

describe('storage contract: local directory', () => {
  let root: string;
  let base: string;
  before(async () => {
    base = await mkdtemp(path.join(os.tmpdir(), 'yuxi-storage-'));
    root = path.join(base, 'root');
  });
  after(async () => {
    await rm(base, { recursive: true, force: true });
  });
  contract(() => ({ name: 'local', storage: createFileStorage({ driver: 'local', dir: root }), files: () => listTree(base) }));

  it('writes only below its root, and leaves no temporary files behind', async () => {
    const storage = createFileStorage({ driver: 'local', dir: root });
    const id = newFileId();
    await storage.put(storageKeys.draft(id), Buffer.from('a'));
    await storage.put(storageKeys.session(SESSION, id), Buffer.from('b'));
    const everything = await listTree(base);
    assert.ok(everything.includes(path.join('root', 'drafts', id)));
    assert.ok(everything.includes(path.join('root', 'sessions', SESSION, 'files', id)));
    assert.ok(everything.every((file) => file.startsWith(`root${path.sep}`) && !file.includes('.tmp-')), everything.join(', '));
  });
});

describe('storage contract: S3 (s3rver on 127.0.0.1)', () => {
  let server: S3rver;
  let directory: string;
  let storage: S3FileStorage;
  before(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'yuxi-s3rver-'));
    server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: 'contract-bucket' }] });
    const { port } = await server.run();
    storage = createFileStorage({
      driver: 's3',
      bucket: 'contract-bucket',
      region: 'us-east-1',
      endpoint: `http://127.0.0.1:${port}`,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      forcePathStyle: true,
      keyPrefix: 'tenant-a/',
    }) as S3FileStorage;
  });
  after(async () => {
    storage?.destroy();
    await server?.close();
    await rm(directory, { recursive: true, force: true });
  });
  contract(() => ({ name: 's3', storage }));

  it('stores every object under the key prefix', async () => {
    const id = newFileId();
    await storage.put(storageKeys.draft(id), Buffer.from('prefixed'));
    const stored = await listTree(directory);
    assert.ok(
      stored.some((file) => file.split(path.sep).join('/').includes(`contract-bucket/tenant-a/drafts/${id}`)),
      `s3rver holds the object under the prefix: ${stored.join(', ')}`,
    );
    await storage.delete(storageKeys.draft(id));
  });
});
