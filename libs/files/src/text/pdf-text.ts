import type { OnModuleDestroy } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import type { FileText } from './file-text.js';
import type { PdfTextReply, PdfTextRequest } from './pdf-text.worker.js';

/** The pages of a PDF read at most (the first ones). */
export const PDF_MAX_PAGES = 50;
/** Reading stops after the page that reaches this many characters (what read_file returns at most). */
export const PDF_MAX_CHARS = 100_000;
/** Far above what the pages of an honest 5 MiB PDF take; what it bounds is a PDF made to never finish. */
export const PDF_TEXT_TIMEOUT_MS = 10_000;
/**
 * How long a read may wait for the files queued before it (reads are serial). Without it, a run of
 * slow files from one session would hold every other session's read_file for their sum.
 */
export const PDF_QUEUE_WAIT_MS = 15_000;
const BOOT_TIMEOUT_MS = 15_000;
// pdf.js needs a few tens of MB for an ordinary file; a decompression bomb hits this instead of the process's heap.
const HEAP_LIMIT_MB = 256;


/** A PDF whose text could not be read (unparsable, too slow, too large); the message is safe to show. */
export class FileTextError extends Error {
  override readonly name = 'FileTextError';
}

export interface PdfTextLimits {
  timeoutMs?: number;
  queueWaitMs?: number;
  maxPages?: number;
  maxChars?: number;
}

/**
 * Reads PDFs' text layers one at a time in a worker thread (see pdf-text.worker.ts for why), with
 * a heap limit, killing and replacing the thread when a file takes longer than the timeout. The
 * thread is unref'd, so an idle reader never keeps a process alive. (The calculator builtin runs
 * the same way.)
 */
export class PdfTextReader implements OnModuleDestroy {
  private worker?: Worker;
  private booting?: Promise<Worker>;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private readonly timeoutMs: number;
  private readonly queueWaitMs: number;
  private readonly maxPages: number;
  private readonly maxChars: number;

  constructor(limits: PdfTextLimits = {}) {
    this.timeoutMs = limits.timeoutMs ?? PDF_TEXT_TIMEOUT_MS;
    this.queueWaitMs = limits.queueWaitMs ?? PDF_QUEUE_WAIT_MS;
    this.maxPages = limits.maxPages ?? PDF_MAX_PAGES;
    this.maxChars = limits.maxChars ?? PDF_MAX_CHARS;
  }

  /**
   * Rejects with FileTextError when the file cannot be read within the limits: its own time, or
   * its wait behind other files (then it is dropped from the queue unread). An aborted signal
   * (a cancelled turn) drops a waiting read at once.
   */
  read(bytes: Uint8Array, signal?: AbortSignal): Promise<FileText> {
    let given = false;
    const run = this.queue.then(() => {
      // Answered already (waited too long, or cancelled): its slot passes on without reading.
      if (given) return undefined;
      given = true;
      return this.run(bytes);
    });
    // Serial, so that each file's time limit measures that file alone.
    this.queue = run.catch(() => undefined);
    return new Promise<FileText>((resolve, reject) => {
      const giveUp = (error: FileTextError) => {
        if (given) return;
        given = true;
        cleanup();
        reject(error);
      };
      const onAbort = () => giveUp(new FileTextError('reading the PDF was cancelled'));
      const timer = setTimeout(() => giveUp(new FileTextError(`the PDF reader is busy with other files (waited ${this.queueWaitMs} ms); try again later`)), this.queueWaitMs);
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      run.then(
        (text) => {
          cleanup();
          if (text) resolve(text);
        },
        (error: unknown) => {
          cleanup();
          reject(error);
        },
      );
    });
  }

  close(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.booting = undefined;
    void worker?.terminate();
  }

  onModuleDestroy(): void {
    this.close();
  }

  private async run(bytes: Uint8Array): Promise<FileText> {
    let worker: Worker;
    try {
      worker = await this.start();
    } catch (error) {
      throw new FileTextError(`the PDF reader is unavailable (${(error as Error).message})`);
    }
    return new Promise<FileText>((resolve, reject) => {
      const id = this.nextId++;
      const finish = (settle: () => void, kill = false) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('exit', onExit);
        if (kill) this.close();
        settle();
      };
      const onMessage = (reply: PdfTextReply) => {
        if (!('id' in reply) || reply.id !== id) return;
        finish(() => (reply.ok ? resolve({ pages: reply.pages, totalPages: reply.totalPages }) : reject(new FileTextError(`the PDF could not be read (${reply.error})`))));
      };
      // An exit mid-read is the heap limit in practice, but a crash or a shutdown's close() end here too.
      const onExit = () => finish(() => reject(new FileTextError('the PDF reader stopped while reading it (most likely: it needs more memory than allowed)')));
      const timer = setTimeout(
        () => finish(() => reject(new FileTextError(`reading the PDF took longer than ${this.timeoutMs} ms`)), true),
        this.timeoutMs,
      );
      worker.on('message', onMessage);
      worker.once('exit', onExit);
      // pdf.js may take ownership of (detach) the buffer it is given: the thread gets a copy.
      const copy = new Uint8Array(bytes);
      worker.postMessage({ id, bytes: copy, maxPages: this.maxPages, maxChars: this.maxChars } satisfies PdfTextRequest, [copy.buffer]);
    });
  }

  private start(): Promise<Worker> {
    if (this.booting) return this.booting;
    const worker = new Worker(new URL('./pdf-text.worker.js', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: HEAP_LIMIT_MB },
    });
    worker.unref();
    this.worker = worker;
    // An 'error' (uncaught exception, out of memory) is always followed by 'exit'; without a
    // listener it would be rethrown in this thread.
    worker.on('error', () => undefined);
    worker.once('exit', () => {
      if (this.worker === worker) this.close();
    });
    this.booting = new Promise<Worker>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('did not start in time')), BOOT_TIMEOUT_MS);
      worker.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with code ${code} while starting`));
      });
      worker.once('message', () => {
        clearTimeout(timer);
        resolve(worker);
      });
    });
    // A failed start is not cached: the next call tries a fresh thread.
    this.booting.catch(() => {
      if (this.worker === worker) this.close();
    });
    return this.booting;
  }
}
