import { FileTextError } from './file-text-error.js';

/**
 * What ends a file reader's wait in its thread's queue (the PDF reader, OCR): the caller's signal
 * (a cancelled turn) or the queue wait running out. Both only end the wait: a read that has
 * started runs to its own time limit. `release()` after the request, whatever it answered.
 */
export function readerWait(queueWaitMs: number, signal: AbortSignal | undefined, messages: { cancelled: string; busy: string }): { signal: AbortSignal; release(): void } {
  const wait = new AbortController();
  const onAbort = () => wait.abort(new FileTextError(messages.cancelled));
  const timer = setTimeout(() => wait.abort(new FileTextError(`${messages.busy} (waited ${queueWaitMs} ms); try again later`, true)), queueWaitMs);
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: wait.signal,
    release() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    },
  };
}
