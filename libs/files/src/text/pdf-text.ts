import type { OnModuleDestroy } from '@nestjs/common';
import { SandboxedThread } from '#libs/sandbox';
import { FileTextError } from './file-text-error.js';
import type { PageScan, PdfTextReply, PdfTextRequest } from './pdf-text.worker.js';
import { readerWait } from './reader-wait.js';
import { PDF_MAX_INFLATED_BYTES } from './inflate-budget.js';

export { FileTextError };

export type { PageScan } from './pdf-text.worker.js';

/** A file's text by page; `totalPages` is more than `pages.length` when only the first pages were read (a long PDF). */
export interface FileText {
  pages: string[];
  totalPages: number;
}

/** A PDF's text layer, with the images of its pages that have none (see PdfTextReader.read's `scans`). */
export interface PdfTextWithScans extends FileText {
  scans: PageScan[];
}

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
// pdf.js needs a few tens of MB for an ordinary file; a decompression bomb hits this instead of the process's heap.
const HEAP_LIMIT_MB = 256;


export interface PdfTextLimits {
  timeoutMs?: number;
  queueWaitMs?: number;
  maxPages?: number;
  maxChars?: number;
  /** What a file's compressed streams may inflate to together (PDF_MAX_INFLATED_BYTES). */
  maxInflatedBytes?: number;
}

/**
 * Reads PDFs' text layers one at a time in a worker thread (see pdf-text.worker.ts for why), with
 * a heap limit, killing and replacing the thread when a file takes longer than the timeout.
 */
export class PdfTextReader implements OnModuleDestroy {
  private readonly thread = new SandboxedThread<PdfTextRequest, Exclude<PdfTextReply, { ready: true }>>({
    url: new URL('./pdf-text.worker.js', import.meta.url),
    heapLimitMb: HEAP_LIMIT_MB,
  });
  private readonly timeoutMs: number;
  private readonly queueWaitMs: number;
  private readonly maxPages: number;
  private readonly maxChars: number;
  private readonly maxInflatedBytes: number;

  constructor(limits: PdfTextLimits = {}) {
    this.timeoutMs = limits.timeoutMs ?? PDF_TEXT_TIMEOUT_MS;
    this.queueWaitMs = limits.queueWaitMs ?? PDF_QUEUE_WAIT_MS;
    this.maxPages = limits.maxPages ?? PDF_MAX_PAGES;
    this.maxChars = limits.maxChars ?? PDF_MAX_CHARS;
    this.maxInflatedBytes = limits.maxInflatedBytes ?? PDF_MAX_INFLATED_BYTES;
  }

  /**
   * Rejects with FileTextError when the file cannot be read within the limits: its own time, or
   * its wait behind other files (then it is dropped from the queue unread). An aborted signal
   * (a cancelled turn) drops a waiting read at once.
   */
  read(bytes: Uint8Array, signal?: AbortSignal): Promise<FileText>;
  /** With `scans`: also the largest image of each page without a text layer, for OCR (pixels above `maxPixels` refused, not copied). */
  read(bytes: Uint8Array, signal: AbortSignal | undefined, scans: { maxPages: number; maxPixels: number }): Promise<PdfTextWithScans>;
  async read(bytes: Uint8Array, signal?: AbortSignal, scans?: { maxPages: number; maxPixels: number }): Promise<FileText | PdfTextWithScans> {
    const wait = readerWait(this.queueWaitMs, signal, { cancelled: 'reading the PDF was cancelled', busy: 'the PDF reader is busy with other files' });
    // pdf.js may take ownership of (detach) the buffer it is given: the thread gets a copy.
    const copy = new Uint8Array(bytes);
    let result;
    try {
      result = await this.thread.request(
        { bytes: copy, maxPages: this.maxPages, maxChars: this.maxChars, scans, maxInflatedBytes: this.maxInflatedBytes },
        { timeoutMs: this.timeoutMs, wait: wait.signal, transfer: [copy.buffer] },
      );
    } finally {
      wait.release();
    }
    switch (result.kind) {
      case 'reply':
        if (!result.reply.ok) throw new FileTextError(`the PDF could not be read (${result.reply.error})`);
        return scans
          ? { pages: result.reply.pages, totalPages: result.reply.totalPages, scans: result.reply.scans ?? [] }
          : { pages: result.reply.pages, totalPages: result.reply.totalPages };
      case 'timeout':
        throw new FileTextError(`reading the PDF took longer than ${this.timeoutMs} ms`);
      case 'exit':
        // The heap limit in practice, but a crash or a shutdown's close() end here too.
        throw new FileTextError('the PDF reader stopped while reading it (most likely: it needs more memory than allowed)');
      case 'unavailable':
        throw new FileTextError(`the PDF reader is unavailable (${result.reason})`);
    }
  }

  close(): void {
    this.thread.close();
  }

  onModuleDestroy(): void {
    this.close();
  }
}
