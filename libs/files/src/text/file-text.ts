import { extractText, getDocumentProxy } from 'unpdf';

const TEXT_TYPES = new Set(['text/plain', 'text/markdown', 'text/csv', 'text/tab-separated-values', 'application/json']);

/**
 * The text of a stored file, page by page: one page for the text kinds, each page's text layer
 * for a PDF (pdf.js through unpdf), null for a kind without text (images).
 */
export async function fileTextPages(bytes: Uint8Array, mimeType: string): Promise<string[] | null> {
  if (TEXT_TYPES.has(mimeType)) return [new TextDecoder('utf-8').decode(bytes).replace(/^\uFEFF/, '')];
  if (mimeType === 'application/pdf') {
    // pdf.js may take ownership of (detach) the buffer it is given: hand it a copy.
    const document = await getDocumentProxy(new Uint8Array(bytes));
    try {
      const { text } = await extractText(document, { mergePages: false });
      return text;
    } finally {
      await document.destroy();
    }
  }
  return null;
}
