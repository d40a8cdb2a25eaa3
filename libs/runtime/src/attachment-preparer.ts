import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { ThrottledLog, withLogContext } from '#libs/config';
import { FILE_STORAGE, type FileEntity, FilesRepository, type FileStorage, StorageObjectMissing } from '#libs/files';
import { AttachmentTransitions, InputsRepository } from '#libs/engine';
import { SessionDispatcher } from '#libs/queue';

/**
 * Prepares an input's attachments: copies each attached file from its upload into the session's
 * workdir (checking its SHA-256), commits the files and the input ready, nudges the session so the
 * input can run, then removes the uploaded copies. The job of the accepting request and the
 * recovery sweep call the same function; it is idempotent (copies are rewritten whole, the commit
 * is conditional) and safe to run twice at once, in one process or in several.
 */
@Injectable()
export class AttachmentPreparer {
  private readonly logger = new Logger(AttachmentPreparer.name);
  private readonly failures = new ThrottledLog(new Logger(AttachmentPreparer.name));
  /** Preparations running in this process, so the job and the sweep share one. */
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly inputs: InputsRepository,
    private readonly files: FilesRepository,
    private readonly transitions: AttachmentTransitions,
    private readonly dispatcher: SessionDispatcher,
    @Inject(FILE_STORAGE) private readonly storage: FileStorage,
  ) {}

  prepare(inputId: string): Promise<void> {
    let running = this.inFlight.get(inputId);
    if (!running) {
      running = this.run(inputId).finally(() => this.inFlight.delete(inputId));
      this.inFlight.set(inputId, running);
    }
    return running;
  }

  /** How many preparations run in this process now (the sweep starts no more than its batch). */
  get running(): number {
    return this.inFlight.size;
  }

  private async run(inputId: string): Promise<void> {
    const input = await this.inputs.findById(inputId);
    if (!input || input.attachmentStatus === 'ready') return;
    await withLogContext({ session_id: input.sessionId }, async () => {
      const files = await this.files.filesOfInput(inputId);
      const copied: string[] = [];
      try {
        for (const file of files) {
          if (file.status !== 'bound') continue;
          await this.copyIntoWorkdir(file);
          copied.push(file.id);
        }
      } catch (error) {
        // Another preparation may have finished meanwhile (and removed the uploads it copied).
        if ((await this.inputs.findById(inputId))?.attachmentStatus === 'ready') return;
        this.failures.warn(`input ${inputId}: attachments not prepared yet (the recovery sweep retries): ${String(error)}`, inputId);
        await this.transitions.preparationFailed(inputId, publicReason(error));
        return;
      }
      const result = await this.transitions.filesPrepared(inputId, copied);
      if (!result) return;
      if (result.becameReady) {
        this.logger.log(`input ${inputId}: ${files.length} attachment(s) ready in the workdir`);
        await this.dispatcher.nudgeReadyInput(result.sessionId, inputId);
      }
      await this.removeOrphanCopies(files.filter((file) => result.deletedIds.includes(file.id)));
      await this.removeUploads(files.filter((file) => !result.deletedIds.includes(file.id) && (file.status === 'ready' || copied.includes(file.id))));
    });
  }

  private async copyIntoWorkdir(file: FileEntity): Promise<void> {
    if (!file.draftKey || !file.sessionKey) throw new Error(`file ${file.id} has no upload to copy`);
    const bytes = await this.storage.get(file.draftKey);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (bytes.length !== file.bytes || sha256 !== file.sha256) throw new IntegrityError(file.id);
    await this.storage.put(file.sessionKey, bytes);
  }

  /**
   * Files deleted while this preparation copied them: their deletion may have removed the workdir
   * copy before this one wrote it, so it is removed again here (a failure is logged; such a copy
   * is harmless to the session, which no longer lists the file).
   */
  private async removeOrphanCopies(files: FileEntity[]): Promise<void> {
    for (const file of files) {
      if (!file.sessionKey) continue;
      try {
        await this.storage.delete(file.sessionKey);
      } catch (error) {
        this.failures.warn(`file ${file.id}: deleted during its preparation; its workdir copy was not removed: ${String(error)}`, 'cleanup');
      }
    }
  }

  /** The workdir owns the content now; an upload that cannot be removed is left to the files sweep. */
  private async removeUploads(files: FileEntity[]): Promise<void> {
    for (const file of files) {
      if (!file.draftKey) continue;
      try {
        await this.storage.delete(file.draftKey);
        await this.files.clearDraftKey(file.id);
      } catch (error) {
        this.failures.warn(`file ${file.id}: upload not removed yet (the files sweep retries): ${String(error)}`, 'cleanup');
      }
    }
  }
}

class IntegrityError extends Error {
  constructor(readonly fileId: string) {
    super(`the stored bytes of file ${fileId} do not match its size and SHA-256`);
  }
}

/** What a client may read in `attachment_error`: the kind of failure, never a path or a driver message. */
function publicReason(error: unknown): string {
  if (error instanceof StorageObjectMissing) return 'The uploaded bytes of an attached file are missing from file storage; retrying';
  if (error instanceof IntegrityError) return `The stored bytes of file ${error.fileId} do not match its SHA-256; retrying`;
  return 'File storage is unavailable; retrying';
}
