import { Injectable, Logger } from '@nestjs/common';
import { InputsRepository } from '#libs/engine';
import { AttachmentPreparer } from './attachment-preparer.js';

/** Background preparations the sweep keeps running in one worker process at most. */
const PREPARATIONS_PER_PROCESS = 16;

/**
 * The sweep's part for attachments: inputs still preparing their attachments whose next try is due
 * (a worker died mid-copy, the job was lost, storage failed) are prepared again, in the background so
 * that a slow store never holds up the rest of the sweep. Each input is retried with exponential
 * backoff (InputsRepository.takeDuePreparations), so preparations that keep failing never starve the
 * others. Preparations of cancelled inputs and archived sessions finish too: a cancelled input's files
 * stay in the session's workdir, where the agent's tools still read them.
 */
@Injectable()
export class PreparationResumption {
  private readonly logger = new Logger(PreparationResumption.name);

  constructor(
    private readonly inputs: InputsRepository,
    private readonly preparer: AttachmentPreparer,
  ) {}

  /** Starts the due preparations this process has room for, without waiting for them; how many it started. */
  async resume(): Promise<number> {
    const room = PREPARATIONS_PER_PROCESS - this.preparer.running;
    if (room <= 0) return 0;
    const due = await this.inputs.takeDuePreparations(room);
    for (const inputId of due) void this.preparer.prepare(inputId).catch((error: unknown) => this.logger.warn(`preparation of input ${inputId} failed: ${String(error)}`));
    return due.length;
  }
}
