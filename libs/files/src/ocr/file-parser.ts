import { type FileText, fileTextPages } from '../text/file-text.js';
import type { PdfTextReader } from '../text/pdf-text.js';
import { imageForOcr, ImageTooLargeError, MAX_IMAGE_PIXELS, rawPixelsForOcr } from './image-pixels.js';
import type { OcrReader } from './ocr-text.js';

/** The scanned pages of a PDF recognised at most (the first ones): each takes the OCR engine seconds. */
export const OCR_MAX_PAGES = 10;
/** Recognition stops after the page that reaches this many characters (what one tool result holds at most). */
export const OCR_MAX_CHARS = 100_000;

export const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Where a page's text comes from: its text (a text file, a PDF's text layer) or recognition of its image. */
export type PageSource = 'text' | 'ocr';

export interface ParsedFile {
  pages: { text: string; source: PageSource }[];
  /** A PDF's page count (more than `pages.length` when only the first pages were read). */
  totalPages: number;
  /** Scanned pages left unrecognised for OCR_MAX_PAGES or OCR_MAX_CHARS (their `text` is empty). */
  pagesNotRecognised: number;
}

/**
 * A file's text for `ocr_parse_file` and the parse route: text files as they are, a PDF's text
 * layer with OCR for its scanned pages (the largest image of each page without text), an image by
 * OCR. Rejects with FileTextError (unreadable, too slow), ImageTooLargeError (an image bomb,
 * refused from its header) or ImageUnreadableError; every message is safe to show.
 */
export class FileParser {
  constructor(
    private readonly pdf: PdfTextReader,
    private readonly ocr: OcrReader,
    private readonly limits: { maxPixels?: number; maxPages?: number; maxChars?: number } = {},
  ) {}

  async parse(bytes: Uint8Array, mimeType: string, signal?: AbortSignal): Promise<ParsedFile | null> {
    const maxPixels = this.limits.maxPixels ?? MAX_IMAGE_PIXELS;
    if (IMAGE_TYPES.has(mimeType)) {
      const text = await this.ocr.recognise(await imageForOcr(bytes, maxPixels), signal);
      return { pages: [{ text, source: 'ocr' }], totalPages: 1, pagesNotRecognised: 0 };
    }
    if (mimeType === 'application/pdf') return this.parsePdf(bytes, maxPixels, signal);
    const text: FileText | null = await fileTextPages(bytes, mimeType, this.pdf, signal);
    return text && { pages: text.pages.map((page) => ({ text: page, source: 'text' })), totalPages: text.totalPages, pagesNotRecognised: 0 };
  }

  private async parsePdf(bytes: Uint8Array, maxPixels: number, signal?: AbortSignal): Promise<ParsedFile> {
    const maxPages = this.limits.maxPages ?? OCR_MAX_PAGES;
    const maxChars = this.limits.maxChars ?? OCR_MAX_CHARS;
    const read = await this.pdf.read(bytes, signal, { maxPages, maxPixels });
    const pages: ParsedFile['pages'] = read.pages.map((text) => ({ text, source: 'text' }));
    let chars = read.pages.reduce((sum, text) => sum + text.length, 0);
    let recognised = 0;
    for (const scan of read.scans) {
      if (chars >= maxChars) break;
      // A page image is decoded by pdf.js already (within its thread's heap limit): its size is known exactly.
      if (scan.refused || !scan.data) throw new ImageTooLargeError(scan.width, scan.height, maxPixels);
      const png = await rawPixelsForOcr({ data: scan.data, width: scan.width, height: scan.height, channels: scan.channels }, maxPixels);
      const text = await this.ocr.recognise(png, signal);
      pages[scan.page - 1] = { text, source: 'ocr' };
      chars += text.length;
      recognised++;
    }
    return { pages, totalPages: read.totalPages, pagesNotRecognised: read.scans.length - recognised };
  }
}
