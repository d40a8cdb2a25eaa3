import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { StoreToolImages } from '#libs/files';
import { PNG } from '../support/file-fixtures.js';

// Images a tool returned count against the account's file quota and the session's image cap: over
// either, the result is recorded without them (nothing is stored) and its output says why.

const config = new AppConfig({ DATABASE_URL: 'postgres://x', REDIS_URL: 'redis://x', FILE_QUOTA_BYTES: '1000', SESSION_IMAGE_BYTES: '500' });

function store(refusal: DomainError | null) {
  const puts: string[] = [];
  const staged: unknown[] = [];
  const repository = {
    stage: async (_sessionId: string, images: unknown[], quota: unknown) => {
      staged.push(quota);
      if (refusal) throw refusal;
      void images;
    },
  };
  const storage = { put: async (key: string) => void puts.push(key) };
  return { images: new StoreToolImages(repository as never, storage as never, config), puts, staged };
}

const SESSION = '01a22bfa-8bdf-7435-8da3-a93fcf70dbb0';
const media = [{ kind: 'image' as const, mimeType: 'image/png', data: PNG }];

describe('tool images within the quotas', () => {
  it('stages them with the deployment\'s quotas and stores them when they fit', async () => {
    const { images, puts, staged } = store(null);
    const result = await images.stage(SESSION, 'screenshot', media);
    assert.equal(result.fileIds.length, 1);
    assert.deepEqual(result.notes, []);
    assert.equal(puts.length, 1);
    assert.deepEqual(staged, [{ accountBytes: 1000, sessionBytes: 500 }]);
  });

  it('over the session\'s cap or the account\'s quota: no file, no blob, and a note naming the limit', async () => {
    const overSession = store(new DomainError('session_image_quota_exceeded', 'over'));
    const capped = await overSession.images.stage(SESSION, 'screenshot', media);
    assert.deepEqual(capped.fileIds, []);
    assert.equal(overSession.puts.length, 0);
    assert.deepEqual(capped.notes, ['[image 1 not shown: it was not stored, the session\'s images reached SESSION_IMAGE_BYTES]']);

    const overAccount = store(new DomainError('file_quota_exceeded', 'over'));
    const full = await overAccount.images.stage(SESSION, 'screenshot', media);
    assert.deepEqual(full.notes, ['[image 1 not shown: it was not stored, the account\'s file quota (FILE_QUOTA_BYTES) is full]']);
  });
});
