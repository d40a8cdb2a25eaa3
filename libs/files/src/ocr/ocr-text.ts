import type { OnModuleDestroy } from '@nestjs/common';
import { SandboxedThread } from '#libs/sandbox';
import { FileTextError } from '../text/pdf-text.js';
import { readerWait } from '../text/reader-wait.js';
import type { OcrReply, OcrRequest } from './ocr-text.worker.js';

/**
 * One image's recognition: a full page at 300 dpi takes tesseract a few seconds on one core; what
 * this bounds is an image made to never finish (and a machine too loaded to be useful).
 */
export const OCR_TIMEOUT_MS = 30_000;
/** How long a recognition waits for the images queued before it (one at a time, so that each has the machine's core). */
export const OCR_QUEUE_WAIT_MS = 60_000;
// The thread's own JavaScript stays small (tesseract's memory is WebAssembly memory in its own
// thread, which the pixel limit bounds): this only stops a runaway in the glue.
const HEAP_LIMIT_MB = 256;

export interface OcrLimits {
  timeoutMs?: number;
  queueWaitMs?: number;
}

/**
 * Recognises the text of images with tesseract.js, one at a time, in a sandboxed worker thread
 * started on first use (neither process loads the engine until an image is read), replaced after
 * a timeout. Rejects with FileTextError, its message safe to show.
 */
export class OcrReader implements OnModuleDestroy {
  private readonly thread = new SandboxedThread<OcrRequest, Exclude<OcrReply, { ready: true }>>({
    url: new URL('./ocr-text.worker.js', import.meta.url),
    heapLimitMb: HEAP_LIMIT_MB,
    // tesseract prints warnings ("Invalid resolution 25 dpi…") to stdout.
    discardOutput: true,
    // Loading tesseract.js itself; the model loads with the first image, within its own time.
    bootTimeoutMs: 30_000,
  });
  readonly timeoutMs: number;
  private readonly queueWaitMs: number;

  constructor(limits: OcrLimits = {}) {
    this.timeoutMs = limits.timeoutMs ?? OCR_TIMEOUT_MS;
    this.queueWaitMs = limits.queueWaitMs ?? OCR_QUEUE_WAIT_MS;
  }

  /** The text of a PNG prepared by image-pixels.ts (checked against the pixel limit, greyscale). */
  async recognise(png: Uint8Array, signal?: AbortSignal): Promise<string> {
    const wait = readerWait(this.queueWaitMs, signal, { cancelled: 'recognising the image was cancelled', busy: 'the OCR engine is busy with other images' });
    const copy = new Uint8Array(png);
    let result;
    try {
      result = await this.thread.request({ png: copy }, { timeoutMs: this.timeoutMs, wait: wait.signal, transfer: [copy.buffer] });
    } finally {
      wait.release();
    }
    switch (result.kind) {
      case 'reply':
        if (!result.reply.ok) throw new FileTextError(`the image could not be recognised (${result.reply.error})`);
        return result.reply.text;
      case 'timeout':
        throw new FileTextError(`recognising the image took longer than ${this.timeoutMs} ms`);
      case 'exit':
        throw new FileTextError('the OCR engine stopped while reading the image (most likely: it needs more memory than allowed)');
      case 'unavailable':
        throw new FileTextError(`the OCR engine is unavailable (${result.reason})`);
    }
  }

  close(): void {
    this.thread.close();
  }

  onModuleDestroy(): void {
    this.close();
  }
}
