// Runs in a worker thread (see pdf-text.ts): pdf.js parses a file the client chose, and a crafted
// PDF can take unbounded time or memory, which must not stall the worker process's event loop (its
// lease renewals, heartbeats and every other turn it runs).
import { parentPort } from 'node:worker_threads';
import { extractImages, getDocumentProxy } from 'unpdf';
import { MAX_IMAGE_PIXELS } from '../ocr/image-pixels.js';
import { inflatedBudgetError } from './inflate-budget.js';

export interface PdfTextRequest {
  id: number;
  bytes: Uint8Array;
  maxPages: number;
  maxChars: number;
  /** For OCR: the largest image of each page without a text layer (a scanned page), at most `maxPages` of them. */
  scans?: { maxPages: number; maxPixels: number };
  /** What the file's Flate streams may inflate to together (inflate-budget.ts). */
  maxInflatedBytes: number;
}
/** A scanned page's largest image, as raw pixels; `refused` when it has more pixels than allowed (not copied out). */
export type PageScan = { page: number; width: number; height: number; channels: 1 | 3 | 4; data?: Uint8Array; refused?: boolean };
export type PdfTextReply =
  | { ready: true }
  | { id: number; ok: true; pages: string[]; totalPages: number; scans?: PageScan[] }
  | { id: number; ok: false; error: string };

/** The text layer of one page: its text items in order, a line break where pdf.js marks one. */
async function pageText(document: Awaited<ReturnType<typeof getDocumentProxy>>, pageNumber: number): Promise<string> {
  const page = await document.getPage(pageNumber);
  try {
    const content = await page.getTextContent();
    let text = '';
    for (const item of content.items) {
      if ('str' in item) text += item.hasEOL ? `${item.str}\n` : item.str;
    }
    return text;
  } finally {
    page.cleanup();
  }
}

/**
 * The largest image painted on a page (a scanner's page image), as pdf.js decoded it; one over the
 * pixel limit was skipped undecoded (maxImageSize). pdf.js cannot render a page without a canvas
 * package, so a page made of vector glyphs without a text layer is not read; scanners and "print
 * to image" produce images.
 */
async function pageScan(document: Awaited<ReturnType<typeof getDocumentProxy>>, page: number, maxPixels: number): Promise<PageScan | null> {
  const images = await extractImages(document, page);
  const largest = images.reduce<(typeof images)[number] | null>((best, image) => (best && best.width * best.height >= image.width * image.height ? best : image), null);
  if (!largest) return null;
  const { width, height, channels } = largest;
  if (width * height > maxPixels) return { page, width, height, channels, refused: true };
  return { page, width, height, channels, data: new Uint8Array(largest.data.buffer, largest.data.byteOffset, largest.data.byteLength) };
}

/** Page by page, from the first, until `maxPages` pages or `maxChars` characters were read. */
async function extract({ bytes, maxPages, maxChars, scans: scanLimits, maxInflatedBytes }: PdfTextRequest): Promise<{ pages: string[]; totalPages: number; scans?: PageScan[] }> {
  const bomb = inflatedBudgetError(bytes, maxInflatedBytes);
  if (bomb) throw new Error(bomb);
  // verbosity 0: errors only (pdf.js would print its warnings about a damaged file to the process's output).
  // maxImageSize: pdf.js skips, undecoded, an image declaring more pixels (decoded pixels are
  // ArrayBuffers, outside the heap limit: a PDF image bomb must never be decoded at all).
  // Always, text reads included (pdf.js decodes an image for more than painting it). isEvalSupported:
  // false, as the thread forbids code from strings anyway (pdf.js would compile font programs).
  const document = await getDocumentProxy(bytes, { verbosity: 0, isEvalSupported: false, maxImageSize: scanLimits?.maxPixels ?? MAX_IMAGE_PIXELS });
  try {
    const pages: string[] = [];
    let chars = 0;
    for (let pageNumber = 1; pageNumber <= Math.min(document.numPages, maxPages) && chars < maxChars; pageNumber++) {
      const text = await pageText(document, pageNumber);
      pages.push(text);
      chars += text.length;
    }
    if (!scanLimits) return { pages, totalPages: document.numPages };
    const scans: PageScan[] = [];
    for (let index = 0; index < pages.length && scans.length < scanLimits.maxPages; index++) {
      if (pages[index]!.trim() !== '') continue;
      const scan = await pageScan(document, index + 1, scanLimits.maxPixels);
      if (scan) scans.push(scan);
    }
    return { pages, totalPages: document.numPages, scans };
  } finally {
    await document.destroy();
  }
}

const port = parentPort;
if (port) {
  port.on('message', (request: PdfTextRequest) => {
    extract(request).then(
      ({ pages, totalPages, scans }) =>
        // Each buffer once: pages that paint the same image share its pixels.
        port.postMessage({ id: request.id, ok: true, pages, totalPages, scans } satisfies PdfTextReply, [...new Set(scans?.flatMap((scan) => (scan.data ? [scan.data.buffer as ArrayBuffer] : [])))]),
      (error: unknown) => port.postMessage({ id: request.id, ok: false, error: error instanceof Error ? error.message : String(error) } satisfies PdfTextReply),
    );
  });
  port.postMessage({ ready: true } satisfies PdfTextReply);
}
