import { CallerSlots } from '#libs/auth';
import { DomainError } from '#libs/errors';

/** Seconds a refused caller is told to wait: a parse or a thumbnail takes seconds, not minutes. */
const RETRY_AFTER_S = 2;

/**
 * How many parse and thumbnail requests one principal may have running at once on this api
 * process (FILE_WORK_PER_PRINCIPAL). Each one decodes a PDF or an image and may queue OCR: without
 * a bound per caller, one account's burst of requests fills the readers' queues and this
 * process's memory, and every other account waits behind it. Per process, as the work is: each
 * replica bounds what it runs itself.
 */
export class PrincipalWorkLimit {
  private readonly slots: CallerSlots;

  constructor(readonly limit: number) {
    this.slots = new CallerSlots(limit);
  }

  /** Runs `work` in one of the principal's slots, or throws 429 `file_work_limited` when all are taken. */
  async run<T>(principalKey: string, work: () => Promise<T>): Promise<T> {
    if (!this.slots.take(principalKey)) {
      throw new DomainError('file_work_limited', `At most ${this.limit} parse or thumbnail requests of one caller run at a time; retry in ${RETRY_AFTER_S} s`, {
        limit: this.limit,
        retry_after: RETRY_AFTER_S,
      });
    }
    try {
      return await work();
    } finally {
      this.slots.give(principalKey);
    }
  }
}
