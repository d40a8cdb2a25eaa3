import type { FileText, PdfTextReader } from './pdf-text.js';

export type { FileText } from './pdf-text.js';

const TEXT_TYPES = new Set(['text/plain', 'text/markdown', 'text/csv', 'text/tab-separated-values', 'application/json']);

/**
 * The text of a stored file, page by page: one page for the text kinds, each page's text layer for
 * a PDF (pdf.js through unpdf, in the reader's worker thread, the first pages only), null for a
 * kind without text (images). A PDF that cannot be read within the reader's limits rejects with
 * FileTextError.
 */
export async function fileTextPages(bytes: Uint8Array, mimeType: string, pdf: PdfTextReader, signal?: AbortSignal): Promise<FileText | null> {
  if (TEXT_TYPES.has(mimeType)) return { pages: [new TextDecoder('utf-8').decode(bytes).replace(/^\uFEFF/, '')], totalPages: 1 };
  if (mimeType === 'application/pdf') return pdf.read(bytes, signal);
  return null;
}
