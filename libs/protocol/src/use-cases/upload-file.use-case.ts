import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { type ReceivedUpload, UploadFile } from '#libs/files';
import { IdempotencyService, type IdempotentResponse } from '#libs/engine';
import { IdempotentWrite } from './idempotent-write.js';

/** Receipts of uploads are scoped to the owner and this route. */
const UPLOAD_SCOPE = 'files.upload';

/**
 * `POST /files`, optionally idempotent. With an `Idempotency-Key` the same request (the same
 * bytes under the same filename) returns the first upload's draft, byte for byte; a different one
 * is 409 `idempotency_conflict`. The receipt commits in the transaction that turns the stored
 * upload into a draft, so a draft exists exactly when its receipt does. A retry that raced the
 * first upload stored a copy of its own before it found the receipt: that copy becomes a
 * tombstone the files sweep removes.
 */
@Injectable()
export class UploadDraft {
  constructor(
    private readonly uploads: UploadFile,
    private readonly idempotentWrite: IdempotentWrite,
  ) {}

  async execute(principal: Principal, upload: ReceivedUpload, rawKey: string | undefined): Promise<IdempotentResponse> {
    if (rawKey === undefined) {
      const file = await this.uploads.execute(principal, upload);
      return { status: 201, body: JSON.stringify(file), replayed: false, receipt: null, sessionId: null };
    }
    const key = IdempotencyService.requireKey(rawKey);
    const checked = await this.uploads.check(upload);
    const requestHash = IdempotencyService.hashIntent({ operation: UPLOAD_SCOPE, filename: checked.filename, bytes: checked.bytes.length, sha256: checked.sha256 });
    let stored: string | null = null;
    const result = await this.idempotentWrite.execute(
      { ownerId: principal.userId, scope: UPLOAD_SCOPE, key, requestHash },
      async (manager) => {
        if (stored === null) throw new Error('the upload was not stored before its transaction');
        const file = await this.uploads.complete(stored, manager);
        return { status: 201, body: file, sessionId: null, receipt: null };
      },
      async () => {
        stored = await this.uploads.store(principal, checked);
      },
    );
    if (result.replayed && stored !== null) await this.uploads.abandon(stored);
    return result;
  }
}
